// Command validator-manager serves the validator management API (release
// 1.11 under /api, release 2.0 under /api/v1) and carries the operator tools.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
	"github.com/validator-manager/validator-manager/impl/server"
)

// version is set at build time: -ldflags "-X main.version=...".
var version = "dev"

// appOptions are what a test binary adds to the App that serve opens (the
// crash tests' shared control plane); none in the production binary.
var appOptions []app.Option

func main() {
	if err := root().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "validator-manager:", err)
		os.Exit(1)
	}
}

func root() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "validator-manager",
		Short:         "Provision, edit, schedule, back up and inspect Canton Network validators",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.AddCommand(serveCmd(), tokenCmd(), recoverCmd(), versionCmd(), nodesimCmd())
	cmd.SetFlagErrorFunc(suggestFlag)
	plainBools(cmd)
	return cmd
}

// plainBools makes help show boolean flags as they are used (--dry-run)
// rather than as pflag writes them (--dry-run[=true|false]); they still
// take --dry-run=false.
func plainBools(c *cobra.Command) {
	c.InitDefaultHelpFlag()
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Value.Type() == "bool" {
			f.Value = plainBool{f.Value}
		}
	})
	for _, sub := range c.Commands() {
		plainBools(sub)
	}
}

// plainBool hides the IsBoolFlag method of a bool flag's value, which is
// what makes pflag print [=true|false]; NoOptDefVal "true" still lets the
// flag stand alone.
type plainBool struct{ pflag.Value }

// noArgs refuses arguments: no command takes any, so one is a mistake that
// would otherwise be ignored, most often a boolean flag's value after a
// space (--api.metrics.public false), which pflag leaves as an argument
// while the flag alone means true.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	if _, perr := strconv.ParseBool(args[0]); perr == nil {
		err = fmt.Errorf("%w (a boolean flag takes its value after '=': --flag=%s)", err, args[0])
	}
	return err
}

// unknownFlag matches pflag's error for a flag the command does not have.
var unknownFlag = regexp.MustCompile(`^unknown flag: --([^= ]+)`)

// suggestFlag adds the nearest flag of the command (or, for a setting that
// has no flag, its environment variable) to an unknown flag's error:
// --port → --listen.
func suggestFlag(cmd *cobra.Command, err error) error {
	m := unknownFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if near := config.Nearest(m[1], names); near != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, near)
	}
	if key := config.Nearest(m[1], config.Keys()); key != "" {
		return fmt.Errorf("%w (setting %s has no flag here; its environment variable is %s)", err, key, config.EnvName(key))
	}
	return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
}

func serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve both API releases",
		Args:  noArgs,
		Long: "Serve release 1.11 under /api and release 2.0 under /api/v1.\n\n" +
			"With no configuration it runs the embedded default: SQLite, an embedded control plane and a\n" +
			"development token issuer, all in --data-dir. It prints a bearer token at start.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags(), os.Getenv)
			if err != nil {
				return err
			}
			log := newLogger(cmd.ErrOrStderr(), cfg.LogLevel)
			for _, name := range config.UnknownEnv(os.Environ()) {
				log.Warn("environment variable names no configuration key; it is ignored", "variable", name)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()

			// The profiling port is opened first too; the Manager serves it.
			var extra []manager.Runnable
			if cfg.PprofListen != "" {
				pln, err := server.ListenPprof(cfg.PprofListen)
				if err != nil {
					return err
				}
				defer pln.Close()
				log.Info("profiling listener", "address", pln.Addr().String())
				extra = append(extra, server.Pprof(pln))
			}
			// The port first: a second server on a taken port stops here,
			// before it creates or migrates anything in the data directory.
			// Connections wait in the backlog until Run serves.
			ln, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				return err
			}
			defer ln.Close()
			a, err := app.Open(ctx, cfg, log, version, appOptions...)
			if err != nil {
				return err
			}
			log.Info("validator-manager listening", "address", ln.Addr().String(), "version", version,
				"database", cfg.DatabaseDriver(), "cluster", cfg.ClusterMode, "namespace", cfg.Namespace)
			if a.Issuer != nil {
				token, err := a.DevToken()
				if err != nil {
					return err
				}
				// The one place a token is printed: the operator asked for the
				// embedded default and needs it to call the API.
				fmt.Fprintf(cmd.OutOrStdout(), "\nDevelopment bearer token (valid %s; `%s token --data-dir %s` prints another):\n\n%s\n\nDocs: http://%s/docs-ui.html\n\n",
					cfg.TokenTTL, os.Args[0], cfg.DataDir, token, ln.Addr().String())
			}
			// When ctx ends, shutdown begins; the last line says it is over.
			stopping := make(chan time.Time, 1)
			go func() { <-ctx.Done(); stopping <- time.Now() }()
			runErr := a.Run(ctx, ln, extra...)
			closeErr := a.Close()
			if ctx.Err() != nil {
				log.Info("validator-manager stopped", "shutdown_seconds", time.Since(<-stopping).Seconds())
			}
			return errors.Join(runErr, closeErr)
		},
	}
	config.RegisterFlags(cmd.Flags())
	return cmd
}

func tokenCmd() *cobra.Command {
	var subject, claims string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print a bearer token that the embedded default accepts",
		Args:  noArgs,
		Long: "Print a bearer token signed with the development key of the data directory of a server\n" +
			"started with `serve` (the key is created at its first start; this command never creates one).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags(), os.Getenv)
			if err != nil {
				return err
			}
			for _, name := range config.UnknownEnv(os.Environ()) {
				fmt.Fprintf(cmd.ErrOrStderr(), "validator-manager: warning: %s names no configuration key; it is ignored\n", name)
			}
			if cfg.JWKSURI != "" {
				return fmt.Errorf("api.auth.jwksUri is set: tokens come from that identity provider, not from the development issuer")
			}
			issuer, err := auth.LoadDevIssuer(cfg.DataDir)
			if err != nil {
				return err
			}
			var extra map[string]any
			if claims != "" {
				if err := json.Unmarshal([]byte(claims), &extra); err != nil {
					return fmt.Errorf("--claims: want a JSON object: %w", err)
				}
			}
			token, err := issuer.IssueWith(subject, cfg.TokenTTL, extra)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), token)
			return nil
		},
	}
	config.RegisterFlags(cmd.Flags(), "dataDir", "token.ttl")
	cmd.Flags().StringVar(&subject, "subject", auth.DevSubject, "the token's sub (who the audit log names)")
	cmd.Flags().StringVar(&claims, "claims", "", `further claims as a JSON object, for roles (api.auth.roles), e.g. '{"realm_access":{"roles":["vm-viewer"]}}'`)
	return cmd
}

// nodesimCmd is the embedded default's simulated node, which `serve`
// starts as a child process of its control plane (nodesim.Command); hidden:
// no one else runs it.
func nodesimCmd() *cobra.Command {
	return &cobra.Command{
		Use:                nodesim.Command,
		Short:              "Run the embedded default's simulated node (serve starts it)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return nodesim.Main(cmd.Context(), args, cmd.ErrOrStderr())
		},
	}
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build version",
		Args:  noArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version)
		},
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
