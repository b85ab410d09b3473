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
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
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
	// A run that migrates changes its server's validator and writes its
	// folder: it gets a fixture of its own. The others leave both as they
	// were (each asserts so) and share one server.
	shared := newRecoverFixture(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := shared
			if tc.wantMigrating {
				f = newRecoverFixture(t)
			}
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
		Name: recValidator, ImageRepo: "registry.example.com/splice", ImageTag: "0.4.2", CustomAuth: &custom,
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
	f.srv.Provisioned(t, recValidator)
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

func (p *onePod) CheckExec(context.Context, string) error { return nil }

// checkRecoverDryRun runs the README's recovery command against a running
// embedded default (base, dataDir): with only --validator, --timestamp and
// --dry-run (and --data-dir and --server, which the test's server needs),
// recover finds the kubeconfig, a token, the sandbox's identity provider and
// validator app, checks all it can and says truthfully that the simulated
// node's pod takes no copy; a real run stops before step 1 saying why.
func checkRecoverDryRun(t *testing.T, base, token, dataDir string) {
	ctx := context.Background()
	c, err := managementapi.NewClientWithResponses(base, managementapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	created, err := c.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("omega"))
	if err != nil || created.JSON201 == nil || created.JSON201.CreatedUser == nil || created.JSON201.CreatedUser.TemporaryPassword == nil {
		t.Fatalf("create: %v %s", err, created.Body)
	}
	password := *created.JSON201.CreatedUser.TemporaryPassword

	rc := adminConfig(t, dataDir)
	core, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	validators := dynamic.NewForConfigOrDie(rc).Resource(cluster.ValidatorResource).Namespace("default")
	// The Deployment may still roll its pod over after the create, and the
	// simulated node runs a Pod within a second, so the first pod may run
	// before the rollover: each case starts when the validator's workloads
	// are rolled out at its current generation (COMPLETED) and exactly one
	// pod runs, as recover requires.
	podRunning := func(t *testing.T) {
		eventually(t, 90*time.Second, "omega rolled out and its validator app pod running", func() bool {
			v, err := validators.Get(ctx, "omega", metav1.GetOptions{})
			if err != nil {
				return false
			}
			phase, _, _ := unstructured.NestedString(v.Object, "status", "phase")
			observed, _, _ := unstructured.NestedInt64(v.Object, "status", "observedGeneration")
			if phase != "COMPLETED" || observed != v.GetGeneration() {
				return false
			}
			pods, err := core.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: cluster.ValidatorAppSelector("omega")})
			return err == nil && len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning && pods.Items[0].DeletionTimestamp == nil
		})
	}

	cases := []struct {
		name     string
		password string
		dryRun   bool
		wantErr  string
		want     []string
	}{
		{name: "dry run", password: password, dryRun: true, want: []string{
			"Embedded default in " + dataDir + ": validator-manager " + base + ", kubeconfig " + filepath.Join(dataDir, "kubeconfig") + " (namespace default), identity provider http://127.0.0.1:",
			"Checking the validator in validator-manager … done (migration 1 → 2)",
			"Looking for the validator pod … done (pod omega-validator-app-",
			"[1/6] Obtaining a token from the identity provider … done",
			"[2/6] Checking that the wallet app answers (the snapshot is not requested) … done",
			"[3/6] Would save data_snapshot to omega-domain_migration_dump.json (mode 0600).",
			"which is simulated (node.kubernetes.io/simulated=true, the embedded default's)",
			"[6/6] Would set the migration of omega to {id: 2, migrating: true} (now 1)",
			"A run without --dry-run stops before step 1",
		}},
		{name: "dry run, wrong password", password: "not-the-password", dryRun: true, wantErr: "step 1/6 (token from the identity provider): identity provider: password token for \"omega_walletuser\": token endpoint answered 401"},
		{name: "real run", password: password, wantErr: "step 4/6 (copy the file into the validator pod): cluster: pod \"omega-validator-app-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			podRunning(t)
			env := map[string]string{envWalletPassword: tc.password}
			cmd := newRecoverCmd(recoverDeps{
				getenv:       func(k string) string { return env[k] },
				readPassword: func(string, io.Writer) (string, error) { return "", errNoTerminal },
				pods:         kubePods,
			})
			var stderr bytes.Buffer
			cmd.SetOut(io.Discard)
			cmd.SetErr(&stderr)
			args := []string{"--validator", "omega", "--timestamp", recTimestamp, "--data-dir", dataDir, "--server", base}
			if tc.dryRun {
				args = append(args, "--dry-run")
			}
			cmd.SetArgs(args)
			err := cmd.ExecuteContext(ctx)
			t.Logf("recover %s:\n%s%v", strings.Join(args, " "), stderr.String(), err)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("got error %v, want none; stderr:\n%s", err, stderr.String())
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got error %v, want one containing %q; stderr:\n%s", err, tc.wantErr, stderr.String())
			}
			for _, line := range tc.want {
				if !strings.Contains(stderr.String(), line) {
					t.Errorf("stderr lacks %q:\n%s", line, stderr.String())
				}
			}
			if strings.Contains(stderr.String()+fmt.Sprint(err), password) {
				t.Errorf("the wallet password appears in the output:\n%s", stderr.String())
			}
			if _, err := os.Stat(recovery.FileName("omega")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dump file: %v, want none written", err)
			}
			r, err := c.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: ptr("omega")})
			if err != nil || r.JSON200 == nil || len(r.JSON200.Validators) != 1 {
				t.Fatalf("list: %v", err)
			}
			if v := r.JSON200.Validators[0]; *v.MigrationId != "1" || (v.MigrationMigrating != nil && *v.MigrationMigrating) {
				t.Errorf("migration: got %s, migrating %v; want 1, unchanged", *v.MigrationId, v.MigrationMigrating)
			}
		})
	}
}

// TestRecoverEmbeddedDefaultMissing: without --auth-url, a data directory
// where no embedded default runs is named, with what is missing, before
// anything is asked.
func TestRecoverEmbeddedDefaultMissing(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	cases := []struct {
		name    string
		files   map[string]string // relative to the data directory
		wantErr string
	}{
		{name: "empty data directory", wantErr: "there is no kubeconfig"},
		{name: "no sandbox network", files: map[string]string{"kubeconfig": "apiVersion: v1\nkind: Config\n"},
			wantErr: filepath.Join("sandbox", "network.json") + " does not exist; is validator-manager serve running there?"},
		{name: "a stopped server's address", files: map[string]string{"kubeconfig": "apiVersion: v1\nkind: Config\n", "sandbox/network.json": `{"url":"` + closed.URL + `","pid":1}`},
			wantErr: "which does not answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var podsOpened atomic.Bool
			cmd := newRecoverCmd(recoverDeps{
				getenv:       func(k string) string { return map[string]string{envWalletPassword: recPassword}[k] },
				readPassword: func(string, io.Writer) (string, error) { return "", errNoTerminal },
				pods: func(string, string, string) (recovery.Pods, string, error) {
					podsOpened.Store(true)
					return nil, "", errors.New("not to be opened")
				},
			})
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SetArgs([]string{"--validator", recValidator, "--timestamp", recTimestamp, "--dry-run", "--data-dir", dir})
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--data-dir "+dir) {
				t.Fatalf("got %v, want an error naming --data-dir %s and containing %q", err, dir, tc.wantErr)
			}
			if podsOpened.Load() {
				t.Error("the cluster was opened")
			}
		})
	}
}

func TestListenURL(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080",
		"0.0.0.0:9090":   "http://127.0.0.1:9090",
		":8080":          "http://127.0.0.1:8080",
		"[::]:8080":      "http://127.0.0.1:8080",
		"[::1]:8080":     "http://[::1]:8080",
		"localhost:8080": "http://localhost:8080",
	} {
		if got := listenURL(listen); got != want {
			t.Errorf("listenURL(%q): got %q, want %q", listen, got, want)
		}
	}
}
