package recovery_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/recovery"
)

const (
	validator   = "acme"
	neighbour   = "acme-two" // contains validator: the name filter matches both
	realm       = "canton"
	password    = "pa55-w0rd-wallet"
	walletToken = "eyJ.wallet-access-token.sig"
	timestamp   = "2025-07-01T10:30:00.000Z"
)

// snapshot is the data_snapshot as the wallet app writes it: odd spacing and
// escapes that a re-encoding would change.
const snapshot = `{ "participant": {"id":"PAR::acme::1220"}, "participant_users": {"identityProviders":[], "users":[]},
  "acs_snapshot": "QUNTIHNuYXBzaG90\u002F==", "acs_timestamp": "2025-07-01T10:29:59.123Z", "dars": [{"hash":"1220ab","content":"UEsD"}],
  "migration_id": 2, "domain_id": "global-domain::1220", "created_at": "2025-07-01T10:31:00Z" }`

func TestProcedure(t *testing.T) {
	if !json.Valid([]byte(snapshot)) {
		t.Fatal("the snapshot fixture is not valid JSON")
	}
	cases := []struct {
		name string
		// edit adjusts the procedure or the fakes before the run.
		edit func(*fixture, *recovery.Procedure)
		// wantStep is the failing step; 0 means success.
		wantStep int
		wantErr  string
		// wantMigration is the validator's migration afterwards.
		wantMigration int32
		wantMigrating bool
		wantFile      bool
		wantCopy      bool
		wantToken     bool // the identity provider was asked
		wantSnapshot  bool // the wallet app was asked for the snapshot
	}{
		{name: "success, current id + 1", wantMigration: 3, wantMigrating: true, wantFile: true, wantCopy: true, wantToken: true, wantSnapshot: true},
		{name: "success, given id", edit: func(_ *fixture, p *recovery.Procedure) { p.MigrationID = 7 },
			wantMigration: 7, wantMigrating: true, wantFile: true, wantCopy: true, wantToken: true, wantSnapshot: true},
		{name: "wrong password", edit: func(_ *fixture, p *recovery.Procedure) { p.WalletPassword = "not-the-password" },
			wantStep: 1, wantErr: "check the wallet password", wantMigration: 2, wantToken: true},
		{name: "wrong realm", edit: func(_ *fixture, p *recovery.Procedure) { p.Realm = "other" },
			wantStep: 1, wantErr: "404", wantMigration: 2, wantToken: true},
		{name: "wallet app fails", edit: func(f *fixture, _ *recovery.Procedure) { f.wallet.status = http.StatusInternalServerError },
			wantStep: 2, wantErr: "wallet app answered 500 Internal Server Error: snapshot failed for Bearer [redacted]", wantMigration: 2, wantToken: true, wantSnapshot: true},
		{name: "wallet app answers without data_snapshot", edit: func(f *fixture, _ *recovery.Procedure) { f.wallet.body = `{"migration_id":3}` },
			wantStep: 2, wantErr: "the response has no data_snapshot", wantMigration: 2, wantToken: true, wantSnapshot: true},
		{name: "wallet app unreachable", edit: func(f *fixture, p *recovery.Procedure) { p.WalletURL = f.closedURL },
			wantStep: 2, wantErr: "wallet app:", wantMigration: 2, wantToken: true},
		{name: "output directory missing", edit: func(f *fixture, p *recovery.Procedure) { p.OutDir = filepath.Join(f.dir, "missing") },
			wantStep: 3, wantErr: "output directory", wantMigration: 2},
		{name: "no pod", edit: func(f *fixture, _ *recovery.Procedure) { f.pods.noPod = true },
			wantStep: 4, wantErr: "no running pod", wantMigration: 2},
		{name: "pod on a simulated node", edit: func(f *fixture, _ *recovery.Procedure) { f.pods.noExec = true },
			wantStep: 4, wantErr: "no kubelet; steps 4 and 5 cannot run, so nothing was started or changed", wantMigration: 2},
		{name: "copy fails", edit: func(f *fixture, _ *recovery.Procedure) { f.pods.failCopy = true },
			wantStep: 4, wantErr: "exec failed", wantMigration: 2, wantFile: true, wantToken: true, wantSnapshot: true},
		{name: "copy corrupted", edit: func(f *fixture, _ *recovery.Procedure) { f.pods.corrupt = true },
			wantStep: 5, wantErr: "the copy is wrong", wantMigration: 2, wantFile: true, wantCopy: true, wantToken: true, wantSnapshot: true},
		{name: "md5 fails", edit: func(f *fixture, _ *recovery.Procedure) { f.pods.failMD5 = true },
			wantStep: 5, wantErr: "md5sum", wantMigration: 2, wantFile: true, wantCopy: true, wantToken: true, wantSnapshot: true},
		{name: "migration id not greater", edit: func(_ *fixture, p *recovery.Procedure) { p.MigrationID = 2 },
			wantStep: 6, wantErr: "the new migration id 2 is not greater than the current 2", wantMigration: 2},
		{name: "unknown validator", edit: func(_ *fixture, p *recovery.Procedure) { p.Validator = "acm" },
			wantStep: 6, wantErr: `no validator "acm"`, wantMigration: 2},
		{name: "validator-manager refuses the token", edit: func(f *fixture, p *recovery.Procedure) { p.Management = f.anonymous },
			wantStep: 6, wantErr: "401", wantMigration: 2},
		{name: "edit never shows", edit: func(f *fixture, p *recovery.Procedure) {
			p.Management = lostEdits{p.Management}
			p.Timeout = 100 * time.Millisecond
		}, wantStep: 6, wantErr: "the edit was accepted but", wantMigration: 2, wantFile: true, wantCopy: true, wantToken: true, wantSnapshot: true},
	}
	shared := startServer(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := shared
			if tc.wantMigrating {
				srv = nil
			}
			f := newFixture(t, srv)
			p := f.procedure()
			if tc.edit != nil {
				tc.edit(f, p)
			}
			res, err := p.Run(context.Background())

			var se *recovery.StepError
			switch {
			case tc.wantStep == 0 && err != nil:
				t.Fatalf("got error %v, want none; progress:\n%s", err, f.out.String())
			case tc.wantStep != 0 && !errors.As(err, &se):
				t.Fatalf("got error %v, want a failure of step %d", err, tc.wantStep)
			case tc.wantStep != 0:
				if se.Step != tc.wantStep {
					t.Errorf("got step %d, want %d (%v)", se.Step, tc.wantStep, err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), fmt.Sprintf("step %d/6 (", tc.wantStep)) {
					t.Errorf("got error %q, want step %d naming itself and containing %q", err, tc.wantStep, tc.wantErr)
				}
				if !strings.Contains(f.out.String(), "failed\n") {
					t.Errorf("progress does not say failed:\n%s", f.out.String())
				}
			}
			f.checkSecrets(t, err)

			if got, migrating := f.migration(t, validator); got != tc.wantMigration || migrating != tc.wantMigrating {
				t.Errorf("got migration %d, migrating %t; want %d, %t", got, migrating, tc.wantMigration, tc.wantMigrating)
			}
			if got, migrating := f.migration(t, neighbour); got != 7 || migrating {
				t.Errorf("neighbour: got migration %d, migrating %t; want 7, false", got, migrating)
			}
			if got := f.kcCalls.Load() > 0; got != tc.wantToken {
				t.Errorf("identity provider asked: got %t, want %t", got, tc.wantToken)
			}
			if got := f.wallet.snapshots.Load() > 0; got != tc.wantSnapshot {
				t.Errorf("snapshot requested: got %t, want %t", got, tc.wantSnapshot)
			}

			path := filepath.Join(f.dir, validator+"-domain_migration_dump.json")
			content, readErr := os.ReadFile(path)
			if got := readErr == nil; got != tc.wantFile {
				t.Fatalf("file written: got %t, want %t (%v)", got, tc.wantFile, readErr)
			}
			if leftovers := f.files(t); len(leftovers) > btoi(tc.wantFile) {
				t.Errorf("got files %v in the output directory, want at most the dump", leftovers)
			}
			if tc.wantFile {
				if string(content) != snapshot {
					t.Errorf("file: got %q, want the data_snapshot value as served %q", content, snapshot)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Errorf("file mode: got %v, want 0600", fi.Mode().Perm())
				}
			}
			copied, ok := f.pods.file(recovery.DumpPath)
			if ok != tc.wantCopy {
				t.Fatalf("copied into the pod: got %t, want %t", ok, tc.wantCopy)
			}
			if ok && !f.pods.corrupt && !bytes.Equal(copied, content) {
				t.Errorf("pod file: got %q, want the local file's bytes", copied)
			}
			if tc.wantStep == 0 {
				sum := md5.Sum([]byte(snapshot))
				want := recovery.Result{File: path, Bytes: int64(len(snapshot)), MD5: hex.EncodeToString(sum[:]), Pod: "acme-validator-app-0", Container: "validator-app",
					PreviousMigrationID: 2, MigrationID: tc.wantMigration}
				if res != want {
					t.Errorf("result: got %+v, want %+v", res, want)
				}
				for _, line := range []string{"[1/6] ", "[2/6] Fetching the data snapshot … done (", "[3/6] ", "[4/6] ", "[5/6] ", "[6/6] "} {
					if !strings.Contains(f.out.String(), line) {
						t.Errorf("progress lacks %q:\n%s", line, f.out.String())
					}
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDryRun: the checks run, nothing is written, copied or edited, and the
// snapshot is not requested.
func TestDryRun(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(*fixture, *recovery.Procedure)
		wantStep int
		wantErr  string
		// wantLines replace the lines of steps 4 and 5 that all checks passing print.
		wantLines []string
	}{
		{name: "all checks pass"},
		{name: "pod on a simulated node", edit: func(f *fixture, _ *recovery.Procedure) { f.pods.noExec = true }, wantLines: []string{
			"Looking for the validator pod … done (pod acme-validator-app-0, container validator-app; files cannot be copied into it)",
			"[4/6] Cannot copy it into pod acme-validator-app-0: cluster: no kubelet.",
			"[5/6] Cannot compare the MD5",
			"A run without --dry-run stops before step 1"}},
		{name: "wrong password", edit: func(_ *fixture, p *recovery.Procedure) { p.WalletPassword = "nope" }, wantStep: 1, wantErr: "invalid_grant"},
		{name: "wallet app not alive", edit: func(f *fixture, _ *recovery.Procedure) { f.wallet.status = http.StatusServiceUnavailable }, wantStep: 2, wantErr: "503"},
		{name: "no pod", edit: func(f *fixture, _ *recovery.Procedure) { f.pods.noPod = true }, wantStep: 4, wantErr: "no running pod"},
		{name: "migration id not greater", edit: func(_ *fixture, p *recovery.Procedure) { p.MigrationID = 1 }, wantStep: 6, wantErr: "not greater"},
	}
	shared := startServer(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, shared)
			p := f.procedure()
			p.DryRun = true
			if tc.edit != nil {
				tc.edit(f, p)
			}
			_, err := p.Run(context.Background())
			var se *recovery.StepError
			if tc.wantStep == 0 {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				lines := []string{"[4/6] Would copy it into pod acme-validator-app-0, container validator-app, at /domain-upgrade-dump/domain_migration_dump.json",
					"[5/6] Would compare the MD5 of both files."}
				if tc.wantLines != nil {
					lines = tc.wantLines
				}
				for _, line := range append([]string{"Dry run", "[1/6] Obtaining a token from the identity provider … done", "[2/6] Checking that the wallet app answers",
					"[3/6] Would save data_snapshot to " + filepath.Join(f.dir, "acme-domain_migration_dump.json"),
					"[6/6] Would set the migration of acme to {id: 3, migrating: true} (now 2)"}, lines...) {
					if !strings.Contains(f.out.String(), line) {
						t.Errorf("progress lacks %q:\n%s", line, f.out.String())
					}
				}
				if tc.wantLines != nil && strings.Contains(f.out.String(), "Would copy") {
					t.Errorf("progress says it would copy:\n%s", f.out.String())
				}
			} else if !errors.As(err, &se) || se.Step != tc.wantStep || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want step %d containing %q", err, tc.wantStep, tc.wantErr)
			}
			f.checkSecrets(t, err)
			if got := f.files(t); len(got) != 0 {
				t.Errorf("got files %v, want none", got)
			}
			if _, ok := f.pods.file(recovery.DumpPath); ok {
				t.Error("got a copy in the pod, want none")
			}
			if n := f.wallet.snapshots.Load(); n != 0 {
				t.Errorf("got %d snapshot requests, want 0", n)
			}
			if got, migrating := f.migration(t, validator); got != 2 || migrating {
				t.Errorf("got migration %d, migrating %t; want 2, false (unchanged)", got, migrating)
			}
		})
	}
}

// TestRejectedInput: bad input stops the run before anything is asked.
func TestRejectedInput(t *testing.T) {
	cases := []struct {
		name, wantErr string
		edit          func(*recovery.Procedure)
	}{
		{"timestamp without zone", "timestamp", func(p *recovery.Procedure) { p.Timestamp = "2025-07-01T10:30:00.000" }},
		{"timestamp with offset", "timestamp", func(p *recovery.Procedure) { p.Timestamp = "2025-07-01T12:30:00.000+02:00" }},
		{"timestamp as date", "timestamp", func(p *recovery.Procedure) { p.Timestamp = "2025-07-01" }},
		{"timestamp with space", "timestamp", func(p *recovery.Procedure) { p.Timestamp = "2025-07-01 10:30:00Z" }},
		{"timestamp out of range", "not a valid time", func(p *recovery.Procedure) { p.Timestamp = "2025-13-01T10:30:00Z" }},
		{"empty timestamp", "timestamp", func(p *recovery.Procedure) { p.Timestamp = "" }},
		{"validator not a DNS label", "validator name", func(p *recovery.Procedure) { p.Validator = "../etc" }},
		{"negative migration id", "negative", func(p *recovery.Procedure) { p.MigrationID = -1 }},
		{"wallet URL without scheme", "wallet URL", func(p *recovery.Procedure) { p.WalletURL = "acme-validator-app:5003" }},
		{"no password", "password is empty", func(p *recovery.Procedure) { p.WalletPassword = "" }},
		{"no realm", "realm", func(p *recovery.Procedure) { p.Realm = "" }},
	}
	shared := startServer(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, shared)
			p := f.procedure()
			tc.edit(p)
			_, err := p.Run(context.Background())
			var se *recovery.StepError
			if err == nil || errors.As(err, &se) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an input error containing %q", err, tc.wantErr)
			}
			if f.out.String() != "" || f.kcCalls.Load() != 0 || f.pods.finds.Load() != 0 {
				t.Errorf("got progress %q, %d token requests, %d pod look-ups; want nothing", f.out.String(), f.kcCalls.Load(), f.pods.finds.Load())
			}
		})
	}
	for _, ts := range []string{"2025-07-01T10:30:00Z", "2025-07-01T10:30:00.1Z", "2025-07-01T10:30:00.123456789Z"} {
		if err := recovery.CheckTimestamp(ts); err != nil {
			t.Errorf("CheckTimestamp(%q): got %v, want nil", ts, err)
		}
	}
}

// fixture is one validator-manager with two validators, an identity
// provider, a wallet app and a pod, all fake but the server.
type fixture struct {
	srv       *apitest.Server
	anonymous managementapi.ClientWithResponsesInterface
	kcURL     string
	kcCalls   atomic.Int32
	wallet    *walletApp
	walletURL string
	closedURL string
	pods      *fakePods
	out       *apitest.Buffer
	dir       string
}

// startServer is a server holding the two validators a run may reach.
func startServer(t *testing.T) *apitest.Server {
	t.Helper()
	srv := apitest.Start(t, apitest.Options{})
	for name, id := range map[string]int32{validator: 2, neighbour: 7} {
		v := validValidator(name, id)
		resp, err := srv.Management.CreateValidatorWithResponse(context.Background(), v)
		if err != nil || resp.StatusCode() != http.StatusCreated {
			t.Fatalf("create validator %s: %v %s", name, err, resp.Body)
		}
		srv.Provisioned(t, name)
	}
	return srv
}

// newFixture is one run's fakes and folder, on srv: a test's runs that
// leave the validators as they were (each asserts so) share one server; a
// run that migrates passes nil and gets one of its own.
func newFixture(t *testing.T, srv *apitest.Server) *fixture {
	t.Helper()
	if srv == nil {
		srv = startServer(t)
	}
	f := &fixture{srv: srv, out: &apitest.Buffer{}, dir: t.TempDir(), pods: &fakePods{}}
	anon, err := managementapi.NewClientWithResponses(f.srv.URL, managementapi.WithHTTPClient(f.srv.HTTP))
	if err != nil {
		t.Fatal(err)
	}
	f.anonymous = anon

	kc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.kcCalls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/auth/realms/"+realm+"/protocol/openid-connect/token" {
			http.NotFound(w, r)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
			t.Errorf("token request Content-Type: got %q, want application/x-www-form-urlencoded", ct)
		}
		if err := r.ParseForm(); err != nil {
			t.Errorf("token request form: %v", err)
		}
		want := map[string]string{"grant_type": "password", "client_id": "acme-wallet-ui", "username": "acme_walletuser"}
		if len(r.PostForm) != len(want)+1 {
			t.Errorf("token request form fields: got %v, want %v and password", keys(r.PostForm), keys(want))
		}
		for k, v := range want {
			if got := r.PostForm.Get(k); got != v {
				t.Errorf("token request %s: got %q, want %q", k, got, v)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("password") != password {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid user credentials"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":300}`, walletToken)
	}))
	t.Cleanup(kc.Close)
	f.kcURL = kc.URL + "/auth"

	f.wallet = &walletApp{t: t, status: http.StatusOK,
		body: "{\"migration_id\": 3,\n \"data_snapshot\": " + snapshot + ",\n \"extra\": [1, {\"data_snapshot\": 0}]}\n"}
	ws := httptest.NewServer(f.wallet)
	t.Cleanup(ws.Close)
	f.walletURL = ws.URL
	closed := httptest.NewServer(http.NotFoundHandler())
	f.closedURL = closed.URL
	closed.Close()
	return f
}

func (f *fixture) procedure() *recovery.Procedure {
	return &recovery.Procedure{
		Validator:      validator,
		Timestamp:      timestamp,
		AuthURL:        f.kcURL,
		Realm:          realm,
		WalletPassword: password,
		WalletURL:      f.walletURL,
		OutDir:         f.dir,
		Management:     f.srv.Management,
		Pods:           f.pods,
		Progress:       f.out,
		Secrets:        []string{f.srv.Token},
		PollInterval:   10 * time.Millisecond,
		Timeout:        5 * time.Second,
	}
}

// migration reads the stored migration of name through the API.
func (f *fixture) migration(t *testing.T, name string) (int32, bool) {
	t.Helper()
	resp, err := f.srv.Management.ListValidatorsWithResponse(context.Background(), &managementapi.ListValidatorsParams{Name: &name})
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("list validators: %v %s", err, resp.Body)
	}
	for _, v := range resp.JSON200.Validators {
		if *v.Name == name {
			id, err := strconv.Atoi(*v.MigrationId)
			if err != nil {
				t.Fatal(err)
			}
			return int32(id), v.MigrationMigrating != nil && *v.MigrationMigrating
		}
	}
	t.Fatalf("no validator %s", name)
	return 0, false
}

// files lists the output directory.
func (f *fixture) files(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// checkSecrets: no password or token in the progress or the error.
func (f *fixture) checkSecrets(t *testing.T, err error) {
	t.Helper()
	text := f.out.String()
	if err != nil {
		text += "\n" + err.Error()
	}
	for name, secret := range map[string]string{"wallet password": password, "wallet token": walletToken, "validator-manager token": f.srv.Token} {
		if strings.Contains(text, secret) {
			t.Errorf("the %s appears in the output or the error:\n%s", name, text)
		}
	}
}

// walletApp serves the data snapshot after checking the request.
type walletApp struct {
	t         *testing.T
	status    int
	body      string
	snapshots atomic.Int32
}

func (a *walletApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/validator/livez":
		w.WriteHeader(a.status)
		return
	case "/api/validator/v0/admin/domain/data-snapshot":
	default:
		http.NotFound(w, r)
		return
	}
	a.snapshots.Add(1)
	q := r.URL.Query()
	for k, want := range map[string]string{"timestamp": timestamp, "force": "true"} {
		if got := q.Get(k); got != want {
			a.t.Errorf("snapshot query %s: got %q, want %q", k, got, want)
		}
	}
	if len(q) != 2 {
		a.t.Errorf("snapshot query: got %v, want timestamp and force only", q)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+walletToken {
		a.t.Errorf("snapshot Authorization: got %q, want the wallet token", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		a.t.Errorf("snapshot Content-Type: got %q, want application/json", got)
	}
	if r.Method != http.MethodGet {
		a.t.Errorf("snapshot method: got %s, want GET", r.Method)
	}
	if a.status != http.StatusOK {
		w.WriteHeader(a.status)
		// A careless upstream echoing the credentials it got.
		fmt.Fprintf(w, "snapshot failed for %s\n\tat SnapshotService.scala:42", r.Header.Get("Authorization"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, a.body)
}

// fakePods is one pod of the validator app with a file system.
type fakePods struct {
	noPod, failCopy, corrupt, failMD5 bool
	noExec                            bool // the pod is on a node without a kubelet
	finds                             atomic.Int32
	mu                                sync.Mutex
	files                             map[string][]byte
}

func (p *fakePods) Find(_ context.Context, v string) (string, string, error) {
	p.finds.Add(1)
	if p.noPod {
		return "", "", fmt.Errorf("cluster: no running pod of validator %q", v)
	}
	return v + "-validator-app-0", "validator-app", nil
}

func (p *fakePods) Copy(_ context.Context, pod, container, path string, r io.Reader) error {
	if pod != "acme-validator-app-0" || container != "validator-app" {
		return fmt.Errorf("copy into unknown %s/%s", pod, container)
	}
	if p.failCopy {
		return errors.New("cluster: exec failed: sh: cannot create: Read-only file system")
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if p.corrupt && len(b) > 0 {
		b[len(b)/2] ^= 0xff
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files = map[string][]byte{}
	}
	p.files[path] = b
	return nil
}

func (p *fakePods) CheckExec(context.Context, string) error {
	if p.noExec {
		return errors.New("cluster: no kubelet")
	}
	return nil
}

func (p *fakePods) MD5(_ context.Context, _, _, path string) (string, error) {
	if p.failMD5 {
		return "", errors.New("cluster: md5sum: command terminated with exit code 127")
	}
	b, ok := p.file(path)
	if !ok {
		return "", fmt.Errorf("md5sum: %s: No such file or directory", path)
	}
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:]), nil
}

func (p *fakePods) file(path string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.files[path]
	return b, ok
}

// lostEdits accepts edits without applying them: the wait must time out.
type lostEdits struct {
	managementapi.ClientWithResponsesInterface
}

func (lostEdits) UpdateValidatorWithResponse(context.Context, managementapi.UpdateValidatorJSONRequestBody, ...managementapi.RequestEditorFn) (*managementapi.UpdateValidatorResponse, error) {
	return &managementapi.UpdateValidatorResponse{HTTPResponse: &http.Response{StatusCode: http.StatusOK, Status: "200 OK"}}, nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// validValidator is a valid create payload (the shape of
// impl/server/operations_test.go) with custom authentication.
func validValidator(name string, migration int32) managementapi.ValidatorDto {
	none := []managementapi.EnvVar{}
	custom := true
	secret := "onboarding-secret"
	return managementapi.ValidatorDto{
		Name:       name,
		ImageRepo:  "registry.example.com/splice",
		ImageTag:   "0.4.2",
		CustomAuth: &custom,
		ClusterConfig: managementapi.ClusterConfigDto{
			AppInfoLedgerNameService: managementapi.AppInfoDto{EnvVars: none},
			AppInfoValidator:         managementapi.AppInfoDto{EnvVars: none},
			DefaultJvmOptions:        "-Xms1g -Xmx2g",
			Migration:                managementapi.MigrationDto{Id: migration},
			PartyHint:                "acme-validator_1",
			ScanAddress:              "https://scan.example.com",
			SvSponsorAddress:         "https://sv.example.com",
		},
		ClusterParticipantConfig: managementapi.ClusterParticipantConfigDto{},
		Participant:              managementapi.AppInfoDto{EnvVars: none},
		OnboardingSecret:         &secret,
	}
}
