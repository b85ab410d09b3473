package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
	"github.com/validator-manager/validator-manager/impl/recovery"
)

// Environment variables of recover: secrets stay out of the command line (ps).
const (
	envWalletPassword = "VM_WALLET_PASSWORD"
	envToken          = "VM_TOKEN"
)

// recoverDeps are recover's ties to the machine, replaced in tests.
type recoverDeps struct {
	getenv func(string) string
	// readPassword prompts on a terminal; errNoTerminal when stdin is none.
	readPassword func(prompt string, stderr io.Writer) (string, error)
	// pods opens the gateway to the validator's pod and says its namespace.
	pods func(kubeconfig, namespace, pod string) (recovery.Pods, string, error)
}

var errNoTerminal = errors.New("stdin is not a terminal")

func recoverCmd() *cobra.Command {
	return newRecoverCmd(recoverDeps{getenv: os.Getenv, readPassword: promptPassword, pods: kubePods})
}

func newRecoverCmd(deps recoverDeps) *cobra.Command {
	var (
		validator, timestamp, authURL, realm, walletURL, server, token string
		kubeconfig, namespace, pod, outDir                             string
		migrationID                                                    int32
		dryRun                                                         bool
		timeout                                                        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "recover --validator NAME --timestamp TS [--auth-url URL --realm REALM] [--migration-id N] [--dry-run]",
		Short: "Recover a validator after a failure of the shared synchronizer",
		Long: `Run the operator recovery procedure of release 1.11 for one validator:

  1. obtain a token for <validator>_walletuser (client <validator>-wallet-ui) from Keycloak
  2. fetch the data snapshot at TS from the wallet app (force=true)
  3. save its data_snapshot as <validator>-domain_migration_dump.json (mode 0600) in --out
  4. copy the file into the validator app pod at ` + recovery.DumpPath + `
  5. verify that both files have the same MD5
  6. set the validator's migration to {id: N, migrating: true} through validator-manager
     (N defaults to the current id + 1) and wait until it shows

Before step 1 it checks the validator, the new migration id, --out and the pod, so a run
that cannot finish changes nothing. --dry-run also checks the token and that the wallet app
answers (without requesting the snapshot), then prints what it would do.

Without --auth-url it works against the embedded default running from --data-dir (make run):
the kubeconfig, the validator-manager token, the server's address and namespace, and the
sandbox's identity provider (realm ` + sandbox.Realm + `, the local wallet users' passwords) and
validator app all come from there. Its validator app pods run on a simulated node without a
kubelet: nothing can be copied into them, so only --dry-run can succeed there.

The wallet password comes from $` + envWalletPassword + ` or, on a terminal, a prompt; the
validator-manager token from --token or $` + envToken + ` (preferred: flags show in ps).
The pod is the running one labelled ` + cluster.ValidatorAppSelector("<validator>") + `
unless --pod names it. Progress goes to stderr.`,
		Example: "  # against `make run`, with the password returned when acme was created\n" +
			"  VM_WALLET_PASSWORD=... validator-manager recover --validator acme --timestamp 2025-07-01T10:30:00.000Z --dry-run\n\n" +
			"  VM_TOKEN=$(validator-manager token) validator-manager recover --validator acme \\\n" +
			"    --timestamp 2025-07-01T10:30:00.000Z --auth-url https://keycloak.example.com/auth --realm canton --dry-run",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Cheap checks first: nothing is asked before the input is right.
			if err := recovery.CheckTimestamp(timestamp); err != nil {
				return err
			}
			if cmd.Flags().Changed("migration-id") && migrationID < 1 {
				return fmt.Errorf("--migration-id %d: must be greater than the current migration id (at least 1)", migrationID)
			}
			if token == "" {
				token = deps.getenv(envToken)
			}
			if authURL == "" {
				e, err := embeddedDefault(cmd, deps.getenv, validator)
				if err != nil {
					return err
				}
				authURL = e.authURL
				if realm == "" {
					realm = e.realm
				}
				if walletURL == "" {
					walletURL = e.walletURL
				}
				if kubeconfig == "" {
					kubeconfig = e.kubeconfig
				}
				if namespace == "" {
					namespace = e.namespace
				}
				if !cmd.Flags().Changed("server") {
					server = e.server
				}
				if token == "" {
					token = e.token
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "Embedded default in %s: validator-manager %s, kubeconfig %s (namespace %s), identity provider %s (realm %s), wallet app %s.\n",
					e.dataDir, server, kubeconfig, namespace, authURL, realm, walletURL)
			}
			pods, ns, err := deps.pods(kubeconfig, namespace, pod)
			if err != nil {
				return err
			}
			if walletURL == "" {
				walletURL = defaultWalletURL(validator, ns)
			}
			mgmt, err := managementClient(server, token)
			if err != nil {
				return err
			}
			password := deps.getenv(envWalletPassword)
			if password == "" {
				password, err = deps.readPassword(fmt.Sprintf("Wallet password of %s_walletuser: ", validator), cmd.ErrOrStderr())
				if errors.Is(err, errNoTerminal) {
					return fmt.Errorf("the wallet password: set %s (stdin is not a terminal to prompt on)", envWalletPassword)
				}
				if err != nil {
					return fmt.Errorf("the wallet password: %w", err)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			p := &recovery.Procedure{
				Validator:      validator,
				Timestamp:      timestamp,
				MigrationID:    migrationID,
				AuthURL:        authURL,
				Realm:          realm,
				WalletPassword: password,
				WalletURL:      walletURL,
				OutDir:         outDir,
				DryRun:         dryRun,
				Management:     mgmt,
				Pods:           pods,
				Progress:       cmd.ErrOrStderr(),
				Secrets:        []string{token},
				Timeout:        timeout,
			}
			_, err = p.Run(ctx)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&validator, "validator", "", "name of the validator (required)")
	f.StringVar(&timestamp, "timestamp", "", "recovery timestamp announced by the network operators, RFC 3339 UTC as in the validator logs, e.g. 2025-07-01T10:30:00.000Z (required)")
	f.Int32Var(&migrationID, "migration-id", 0, "new migration id (default: the current one + 1)")
	f.BoolVar(&dryRun, "dry-run", false, "check what can be checked and print what would be done; write, copy and edit nothing")
	f.StringVar(&authURL, "auth-url", "", "Keycloak base URL, including /auth when your Keycloak serves under it (default: the embedded default's identity provider in --data-dir)")
	f.StringVar(&realm, "realm", "", "Keycloak realm of the wallet user (required with --auth-url)")
	f.StringVar(&walletURL, "wallet-url", "", "base URL of the validator app (default http://<validator>-validator-app.<namespace>.svc.cluster.local:5003; on the embedded default its sandbox validator app)")
	f.StringVar(&server, "server", "http://127.0.0.1:8080", "base URL of validator-manager (on the embedded default: its listen address)")
	f.StringVar(&token, "token", "", "bearer token for validator-manager (default $"+envToken+"; on the embedded default a development token from --data-dir)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config; in a pod, its service account; on the embedded default <data-dir>/kubeconfig)")
	f.StringVar(&namespace, "namespace", "", "namespace of the validator (default: the kubeconfig context's; on the embedded default api.namespace)")
	f.StringVar(&pod, "pod", "", "name of the validator app pod (default: found by its labels)")
	f.StringVar(&outDir, "out", "", "directory that receives the dump file (default: the current directory)")
	f.DurationVar(&timeout, "wait", recovery.DefaultTimeout, "how long to wait for the migration edit to show")
	// --data-dir, read as `token` and `serve` read it (flag, VM_DATA_DIR, --config).
	config.RegisterFlags(f, "dataDir")
	for _, name := range []string{"validator", "timestamp"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// embedded is what recover takes from a running embedded default.
type embedded struct {
	dataDir, server, token, kubeconfig, namespace string
	authURL, realm, walletURL                     string
}

// embeddedDefault finds validator on the embedded default that runs from
// the data directory: its kubeconfig, a development token, the server's
// listen address and namespace, and the sandbox's identity provider and
// validator app (whose nodes this starts, as the server would on first use).
func embeddedDefault(cmd *cobra.Command, getenv func(string) string, validator string) (embedded, error) {
	cfg, err := config.Load(cmd.Flags(), getenv)
	if err != nil {
		return embedded{}, err
	}
	e := embedded{dataDir: cfg.DataDir, kubeconfig: filepath.Join(cfg.DataDir, "kubeconfig"), namespace: cfg.Namespace, server: listenURL(cfg.Listen)}
	if _, err := os.Stat(e.kubeconfig); err != nil {
		return e, fmt.Errorf("without --auth-url, recover works against the embedded default running from --data-dir %s, but there is no kubeconfig: %w; "+
			"start it (make run, or validator-manager serve --data-dir %s), or give --auth-url, --realm and --kubeconfig of your cluster", cfg.DataDir, err, cfg.DataDir)
	}
	ep, err := sandbox.Discover(cmd.Context(), filepath.Join(cfg.DataDir, "sandbox"), validator)
	switch {
	case errors.Is(err, sandbox.ErrNotRunning):
		return e, fmt.Errorf("without --auth-url, recover works against the embedded default running from --data-dir %s: %w; is validator-manager serve running there?", cfg.DataDir, err)
	case err != nil:
		return e, err
	}
	e.authURL, e.realm, e.walletURL = ep.AuthURL, ep.Realm, ep.ValidatorAppURL
	if issuer, err := auth.LoadDevIssuer(cfg.DataDir); err == nil {
		if e.token, err = issuer.Issue(auth.DevSubject, cfg.TokenTTL); err != nil {
			return e, err
		}
	}
	return e, nil
}

// listenURL is the base URL a client on this machine reaches a listen
// address at (an unspecified host is loopback).
func listenURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func defaultWalletURL(validator, namespace string) string {
	return domain.ValidatorAppURL(validator, namespace)
}

// managementClient is a release 1.11 client of server that sends token.
func managementClient(server, token string) (*managementapi.ClientWithResponses, error) {
	return managementapi.NewClientWithResponses(strings.TrimRight(server, "/"),
		managementapi.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}),
		managementapi.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			return nil
		}))
}

// kubePods connects to the cluster of kubeconfig (in a pod: its service
// account) and works in namespace, by default the context's.
func kubePods(kubeconfig, namespace, pod string) (recovery.Pods, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: namespace}})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("cluster configuration: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("cluster namespace: %w", err)
	}
	cfg.UserAgent = "validator-manager recover"
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: %w", err)
	}
	e := cluster.NewPodExec(cfg, core, ns)
	e.Pod = pod
	return e, ns, nil
}

// promptPassword reads a password without echo from the terminal on stdin.
func promptPassword(prompt string, stderr io.Writer) (string, error) {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return "", errNoTerminal
	}
	fmt.Fprint(stderr, prompt)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(stderr)
	return string(b), err
}
