package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/pflag"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/recovery"
)

const (
	recValidator   = "acme"
	recPassword    = "s3cret-wallet-pw"
	recWalletToken = "eyJ.recover-wallet-token.sig"
	recTimestamp   = "2025-07-01T10:30:00.000Z"
	recSnapshot    = `{"participant":{"id":"PAR::acme::1220"},"acs_snapshot":"QUJD","migration_id":2}`
)

// TestRecover runs the command end to end: the real server in-process, a
// fake Keycloak, wallet app and pod.
func TestRecover(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		prompt  string // typed at the password prompt; "" means stdin is no terminal
		noToken bool   // VM_TOKEN unset
		wantErr string
		// after the run
		wantMigration int32
		wantMigrating bool
		wantFile      bool
		wantPodsOpen  bool
	}{
		{name: "recovery", wantMigration: 3, wantMigrating: true, wantFile: true, wantPodsOpen: true},
		{name: "given migration id", args: []string{"--migration-id", "9"}, wantMigration: 9, wantMigrating: true, wantFile: true, wantPodsOpen: true},
		{name: "token as a flag", args: []string{"--token", "{token}"}, noToken: true, wantMigration: 3, wantMigrating: true, wantFile: true, wantPodsOpen: true},
		{name: "password at the prompt", env: map[string]string{envWalletPassword: ""}, prompt: recPassword, wantMigration: 3, wantMigrating: true, wantFile: true, wantPodsOpen: true},
		{name: "dry run", args: []string{"--dry-run"}, wantMigration: 2, wantPodsOpen: true},
		{name: "no password and no terminal", env: map[string]string{envWalletPassword: ""}, wantErr: "set VM_WALLET_PASSWORD", wantMigration: 2, wantPodsOpen: true},
		{name: "wrong password", env: map[string]string{envWalletPassword: "wrong"}, wantErr: "step 1/6", wantMigration: 2, wantPodsOpen: true},
		{name: "no validator-manager token", noToken: true, wantErr: "step 6/6", wantMigration: 2, wantPodsOpen: true},
		{name: "bad timestamp", args: []string{"--timestamp", "2025-07-01 10:30"}, wantErr: "RFC 3339", wantMigration: 2},
		{name: "migration id 0", args: []string{"--migration-id", "0"}, wantErr: "--migration-id 0", wantMigration: 2},
		{name: "migration id not greater", args: []string{"--migration-id", "2"}, wantErr: "not greater than the current 2", wantMigration: 2, wantPodsOpen: true},
		{name: "missing realm", args: []string{"--realm", ""}, wantErr: "realm", wantMigration: 2, wantPodsOpen: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newRecoverFixture(t)
			env := map[string]string{envWalletPassword: recPassword, envToken: f.srv.Token}
			if tc.noToken {
				delete(env, envToken)
			}
			for k, v := range tc.env {
				env[k] = v
			}
			// --wallet-url is given: its default is a cluster address (TestDefaultWalletURL).
			args := []string{"--validator", recValidator, "--timestamp", recTimestamp, "--auth-url", f.kcURL, "--realm", "canton",
				"--server", f.srv.URL, "--out", f.dir, "--wallet-url", f.walletURL}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "{token}", f.srv.Token))
			}
			var podsOpened atomic.Bool
			deps := recoverDeps{
				getenv: func(k string) string { return env[k] },
				readPassword: func(prompt string, stderr io.Writer) (string, error) {
					if tc.prompt == "" {
						return "", errNoTerminal
					}
					fmt.Fprint(stderr, prompt)
					return tc.prompt, nil
				},
				pods: func(kubeconfig, namespace, pod string) (recovery.Pods, string, error) {
					podsOpened.Store(true)
					return f.pods, "validators", nil
				},
			}
			cmd := newRecoverCmd(deps)
			var stdout, stderr bytes.Buffer
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			cmd.SetArgs(args)
			err := cmd.ExecuteContext(context.Background())

			if tc.wantErr == "" && err != nil {
				t.Fatalf("got error %v, want none; stderr:\n%s", err, stderr.String())
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
			output := stdout.String() + stderr.String()
			if err != nil {
				output += err.Error()
			}
			for name, secret := range map[string]string{"wallet password": recPassword, "wallet token": recWalletToken, "validator-manager token": f.srv.Token} {
				if strings.Contains(output, secret) {
					t.Errorf("the %s appears in the output:\n%s", name, output)
				}
			}
			if got := podsOpened.Load(); got != tc.wantPodsOpen {
				t.Errorf("cluster opened: got %t, want %t", got, tc.wantPodsOpen)
			}
			id, migrating := f.migration(t)
			if id != tc.wantMigration || migrating != tc.wantMigrating {
				t.Errorf("got migration %d, migrating %t; want %d, %t", id, migrating, tc.wantMigration, tc.wantMigrating)
			}
			content, readErr := os.ReadFile(filepath.Join(f.dir, "acme-domain_migration_dump.json"))
			if got := readErr == nil; got != tc.wantFile {
				t.Fatalf("file written: got %t, want %t", got, tc.wantFile)
			}
			if tc.wantFile {
				if string(content) != recSnapshot || !bytes.Equal(f.pods.copied, content) {
					t.Errorf("file %q, pod %q; want both %q", content, f.pods.copied, recSnapshot)
				}
				if !strings.Contains(stderr.String(), "[2/6] Fetching the data snapshot … done (") {
					t.Errorf("stderr lacks the progress:\n%s", stderr.String())
				}
			}
			if tc.prompt != "" && !strings.Contains(stderr.String(), "Wallet password of acme_walletuser: ") {
				t.Errorf("stderr lacks the prompt:\n%s", stderr.String())
			}
		})
	}
}

func TestRecoverFlags(t *testing.T) {
	cmd := newRecoverCmd(recoverDeps{})
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if strings.Contains(fl.Name, "password") {
			t.Errorf("flag --%s: the wallet password must not come from a flag", fl.Name)
		}
	})
	cmd.SetArgs([]string{"--timestamp", recTimestamp})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `"validator"`) {
		t.Errorf("got %v, want the missing --validator named", err)
	}
	found := false
	for _, c := range root().Commands() {
		found = found || c.Name() == "recover"
	}
	if !found {
		t.Error("the root command has no recover")
	}
}

func TestDefaultWalletURL(t *testing.T) {
	if got, want := defaultWalletURL("acme", "validators"), "http://acme-validator-app.validators.svc.cluster.local:5003"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestKubePods: the namespace comes from --namespace, else the kubeconfig context.
func TestKubePods(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://k8s.example:6443"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: from-context}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flag, want string }{{"", "from-context"}, {"explicit", "explicit"}} {
		pods, ns, err := kubePods(kubeconfig, tc.flag, "")
		if err != nil || pods == nil || ns != tc.want {
			t.Errorf("--namespace %q: got %q, %v; want %q", tc.flag, ns, err, tc.want)
		}
	}
	if _, _, err := kubePods(filepath.Join(t.TempDir(), "missing"), "", ""); err == nil {
		t.Error("missing kubeconfig: got no error, want one")
	}
}

type recoverFixture struct {
	srv       *apitest.Server
	kcURL     string
	walletURL string
	pods      *onePod
	dir       string
}

func newRecoverFixture(t *testing.T) *recoverFixture {
	t.Helper()
	f := &recoverFixture{srv: apitest.Start(t, apitest.Options{}), dir: t.TempDir(), pods: &onePod{}}
	none := []managementapi.EnvVar{}
	custom, secret := true, "onboarding-secret"
	resp, err := f.srv.Management.CreateValidatorWithResponse(context.Background(), managementapi.ValidatorDto{
		Name: recValidator, ImageRepo: "registry.example.com/splice/validator-app", ImageTag: "0.4.2", CustomAuth: &custom,
		ClusterConfig: managementapi.ClusterConfigDto{
			AppInfoLedgerNameService: managementapi.AppInfoDto{EnvVars: none}, AppInfoValidator: managementapi.AppInfoDto{EnvVars: none},
			DefaultJvmOptions: "-Xms1g -Xmx2g", Migration: managementapi.MigrationDto{Id: 2}, PartyHint: "acme-validator_1",
			ScanAddress: "https://scan.example.com", SvSponsorAddress: "https://sv.example.com",
		},
		Participant: managementapi.AppInfoDto{EnvVars: none}, OnboardingSecret: &secret,
	})
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create validator: %v %s", err, resp.Body)
	}
	kc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/auth/realms/canton/protocol/openid-connect/token" || r.FormValue("client_id") != "acme-wallet-ui" ||
			r.FormValue("username") != "acme_walletuser" || r.FormValue("grant_type") != "password" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.FormValue("password") != recPassword {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid user credentials"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer"}`, recWalletToken)
	}))
	t.Cleanup(kc.Close)
	f.kcURL = kc.URL + "/auth"
	wallet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/validator/livez":
		case r.URL.Path == "/api/validator/v0/admin/domain/data-snapshot" && r.Header.Get("Authorization") == "Bearer "+recWalletToken &&
			r.URL.Query().Get("timestamp") == recTimestamp && r.URL.Query().Get("force") == "true":
			fmt.Fprintf(w, `{"data_snapshot":%s,"migration_id":3}`, recSnapshot)
		default:
			http.Error(w, "unexpected request", http.StatusBadRequest)
		}
	}))
	t.Cleanup(wallet.Close)
	f.walletURL = wallet.URL
	return f
}

func (f *recoverFixture) migration(t *testing.T) (int32, bool) {
	t.Helper()
	name := recValidator
	resp, err := f.srv.Management.ListValidatorsWithResponse(context.Background(), &managementapi.ListValidatorsParams{Name: &name})
	if err != nil || resp.JSON200 == nil || len(resp.JSON200.Validators) != 1 {
		t.Fatalf("list validators: %v %s", err, resp.Body)
	}
	v := resp.JSON200.Validators[0]
	var id int32
	fmt.Sscan(*v.MigrationId, &id)
	return id, v.MigrationMigrating != nil && *v.MigrationMigrating
}

// onePod keeps what is copied into it.
type onePod struct{ copied []byte }

func (p *onePod) Find(context.Context, string) (string, string, error) {
	return "acme-validator-app-0", "validator-app", nil
}

func (p *onePod) Copy(_ context.Context, _, _, path string, r io.Reader) error {
	if path != recovery.DumpPath {
		return errors.New("unexpected path " + path)
	}
	b, err := io.ReadAll(r)
	p.copied = b
	return err
}

func (p *onePod) MD5(context.Context, string, string, string) (string, error) {
	sum := md5.Sum(p.copied)
	return hex.EncodeToString(sum[:]), nil
}
