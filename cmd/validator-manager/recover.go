package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
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
		Use:   "recover --validator NAME --timestamp TS --auth-url URL --realm REALM [--migration-id N] [--dry-run]",
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

The wallet password comes from $` + envWalletPassword + ` or, on a terminal, a prompt; the
validator-manager token from --token or $` + envToken + ` (preferred: flags show in ps).
The pod is the running one labelled ` + cluster.ValidatorAppSelector("<validator>") + `
unless --pod names it. Progress goes to stderr.`,
		Example: "  VM_TOKEN=$(validator-manager token) validator-manager recover --validator acme \\\n" +
			"    --timestamp 2025-07-01T10:30:00.000Z --auth-url https://keycloak.example.com/auth --realm canton --dry-run",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Cheap checks first: nothing is asked before the input is right.
			if err := recovery.CheckTimestamp(timestamp); err != nil {
				return err
			}
			if cmd.Flags().Changed("migration-id") && migrationID < 1 {
				return fmt.Errorf("--migration-id %d: must be greater than the current migration id (at least 1)", migrationID)
			}
			pods, ns, err := deps.pods(kubeconfig, namespace, pod)
			if err != nil {
				return err
			}
			if walletURL == "" {
				walletURL = defaultWalletURL(validator, ns)
			}
			if token == "" {
				token = deps.getenv(envToken)
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
	f.StringVar(&authURL, "auth-url", "", "Keycloak base URL, including /auth when your Keycloak serves under it (required)")
	f.StringVar(&realm, "realm", "", "Keycloak realm of the wallet user (required)")
	f.StringVar(&walletURL, "wallet-url", "", "base URL of the validator app (default http://<validator>-validator-app.<namespace>.svc.cluster.local:5003)")
	f.StringVar(&server, "server", "http://127.0.0.1:8080", "base URL of validator-manager")
	f.StringVar(&token, "token", "", "bearer token for validator-manager (default $"+envToken+")")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config; in a pod, its service account)")
	f.StringVar(&namespace, "namespace", "", "namespace of the validator (default: the kubeconfig context's)")
	f.StringVar(&pod, "pod", "", "name of the validator app pod (default: found by its labels)")
	f.StringVar(&outDir, "out", "", "directory that receives the dump file (default: the current directory)")
	f.DurationVar(&timeout, "wait", recovery.DefaultTimeout, "how long to wait for the migration edit to show")
	for _, name := range []string{"validator", "timestamp", "auth-url", "realm"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
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
	e := cluster.NewPodExec(cfg, core, ns, cluster.ValidatorAppSelector)
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
