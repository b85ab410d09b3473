package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
)

// childVariable makes the test binary run the command line it is given
// instead of the tests: the crash test's server process. faultVariable names
// the fault point at which that process kills itself, as `kill -9` would:
// nothing after that line runs, no deferred function, no compensation.
const (
	childVariable = "VALIDATOR_MANAGER_CRASHTEST_CHILD"
	faultVariable = "VALIDATOR_MANAGER_CRASHTEST_FAULTPOINT"
	// planeVariable names the kubeconfig of the test process's control
	// plane, which the child's embedded default uses (it outlives the child).
	planeVariable = "VALIDATOR_MANAGER_CRASHTEST_KUBECONFIG"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == nodesim.Command {
		// The simulated node of a `serve` this test process runs.
		cmd := root()
		cmd.SetArgs(os.Args[1:])
		if err := cmd.Execute(); err != nil {
			fmt.Fprintln(os.Stderr, "validator-manager:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(childVariable) != "" {
		if point := os.Getenv(faultVariable); point != "" {
			faultpoint.Arm(func(name string) {
				if name != point {
					return
				}
				fmt.Fprintf(os.Stderr, "faultpoint %s reached: killing the process\n", name)
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			})
		}
		rc, err := clientcmd.BuildConfigFromFlags("", os.Getenv(planeVariable))
		if err != nil {
			fmt.Fprintln(os.Stderr, "validator-manager:", err)
			os.Exit(1)
		}
		appOptions = append(appOptions, app.WithControlPlane(rc))
		cmd := root()
		cmd.SetArgs(os.Args[1:])
		if err := cmd.Execute(); err != nil {
			fmt.Fprintln(os.Stderr, "validator-manager:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	apitest.Main(m)
}

// crashCase kills the server at one fault point of one operation.
type crashCase struct {
	point string
	// setup runs on a healthy server before the crash run.
	setup func(t *testing.T, w *world)
	// act sends the request that reaches the fault point.
	act func(c *managementapi.ClientWithResponses) error
	// exists tells whether the validator "v" must exist after recovery.
	exists bool
	// answers: the fault point is the leader's, reached after the request
	// was answered (a create or an edit is recorded, then provisioned).
	answers bool
	// check asserts what is particular to the case, after recovery.
	check func(t *testing.T, w *world)
}

func create(name string) func(c *managementapi.ClientWithResponses) error {
	return func(c *managementapi.ClientWithResponses) error {
		_, err := c.CreateValidatorWithResponse(context.Background(), apitest.ValidatorPayload(name))
		return err
	}
}

// setupValidator creates v and waits until the leader has provisioned it,
// so that the crash run's fault point is reached by what it sends.
func setupValidator(t *testing.T, w *world) {
	t.Helper()
	r, err := w.client.CreateValidatorWithResponse(context.Background(), apitest.ValidatorPayload("v"))
	if err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("setup create: %v %v", statusOf(r), err)
	}
	apitest.Eventually(t, 20*time.Second, "v provisioned", func() error {
		v, err := w.app.Store.GetValidator(context.Background(), "v")
		if err != nil {
			return err
		}
		if v.PendingSecrets != "" || v.WalletUserID == "" {
			return fmt.Errorf("not provisioned yet")
		}
		if _, err := w.inspector().Resource(context.Background(), "v"); err != nil {
			return err
		}
		return nil
	})
}

// setupRunning creates v and waits until its database runs (backups need it).
func setupRunning(t *testing.T, w *world) {
	t.Helper()
	c := w.client
	setupValidator(t, w)
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := c.CreateBackupScheduleWithResponse(context.Background(), "v", managementapi.ValidatorBackupDto{Cron: ptr("0 3 * * *"), MaxBackups: 3})
		if err == nil && r.StatusCode() == http.StatusCreated {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("setup backup: %v %v", statusOf(r), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func statusOf(r interface{ StatusCode() int }) int {
	if r == nil {
		return 0
	}
	return r.StatusCode()
}

var crashCases = []crashCase{
	// A recorded create is finished, never undone: one wallet user, one
	// resource, whatever line the kill hits.
	{point: "create.recorded", act: create("v"), exists: true, check: func(t *testing.T, w *world) { w.wantUsers(t, "v_walletuser") }},
	{point: "create.walletUser", act: create("v"), exists: true, answers: true, check: func(t *testing.T, w *world) { w.wantUsers(t, "v_walletuser") }},
	{point: "auth.provisioned", act: create("v"), exists: true, answers: true, check: func(t *testing.T, w *world) { w.wantUsers(t, "v_walletuser") }},
	{point: "validator.applied", act: create("v"), exists: true, answers: true, check: func(t *testing.T, w *world) { w.wantUsers(t, "v_walletuser") }},
	{point: "secrets.written", act: create("v"), exists: true, answers: true, check: func(t *testing.T, w *world) { w.wantUsers(t, "v_walletuser") }},
	{
		// The edit's password is recorded (sealed); the leader is killed
		// between writing it into the Secret and clearing it.
		point: "secrets.written", setup: setupValidator, exists: true, answers: true,
		act: edit("0.9.9"),
	},
	{
		point: "edit.written", setup: setupValidator, exists: true,
		act: edit("0.9.9"),
		check: func(t *testing.T, w *world) {
			if got := w.imageTag(t, "v"); got != "0.9.9" {
				t.Errorf("image tag: got %q, want the recorded 0.9.9 running", got)
			}
		},
	},
	{
		point: "prune.create.written", setup: setupValidator, exists: true,
		act: func(c *managementapi.ClientWithResponses) error {
			_, err := c.CreatePruneScheduleWithResponse(context.Background(), "v",
				managementapi.ScheduledValidatorPruneDto{Cron: "0 0 20 * * ?", MaxDuration: "5m", Retention: "48h"})
			return err
		},
	},
	{
		point: "backup.save.written", setup: func(t *testing.T, w *world) {
			setupRunning(t, w)
			c := w.client
			if r, err := c.DeleteBackupScheduleWithResponse(context.Background(), "v"); err != nil || r.StatusCode() != http.StatusNoContent {
				t.Fatalf("setup delete backup: %v %v", statusOf(r), err)
			}
		},
		exists: true,
		act: func(c *managementapi.ClientWithResponses) error {
			_, err := c.UpdateBackupScheduleWithResponse(context.Background(), "v", managementapi.ValidatorBackupDto{Cron: ptr("0 4 * * *"), MaxBackups: 5})
			return err
		},
	},
	{
		point: "backup.delete.written", setup: setupRunning, exists: true,
		act: func(c *managementapi.ClientWithResponses) error {
			_, err := c.DeleteBackupScheduleWithResponse(context.Background(), "v")
			return err
		},
	},
}

func edit(tag string) func(c *managementapi.ClientWithResponses) error {
	return func(c *managementapi.ClientWithResponses) error {
		_, err := c.UpdateValidatorWithResponse(context.Background(), managementapi.ValidatorEditDto{
			Name: "v", ImageTag: ptr(tag), DatabaseConfig: &managementapi.ValidatorDbConfigDto{Username: ptr("cnadmin"), Password: ptr("rotated-password")},
		})
		return err
	}
}

// TestCrashConverges kills the server (SIGKILL, from inside, at a fault
// point) in the middle of every multi-store write, restarts it and asserts
// that the database, the identity provider and the cluster agree once the
// restarted server reports healthy: an interrupted create is undone whole or
// complete, and every record is what the cluster runs. On SQLite, and on
// PostgreSQL when TEST_POSTGRES_DSN is set.
func TestCrashConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process per case")
	}
	databases := map[string]func(t *testing.T) string{"sqlite": func(*testing.T) string { return "" }}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		databases["postgres"] = func(t *testing.T) string { return apitest.ThrowawayPostgres(t) }
	} else {
		t.Log("TEST_POSTGRES_DSN is not set: the crash test runs on SQLite only")
	}
	// The build runs while the package's other tests do; each case has its
	// own data directory, database and namespace, so the cases run side by side.
	built := faultBinary(t)
	t.Parallel()
	bin := built()
	for db, dsn := range databases {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			for i, c := range crashCases {
				t.Run(fmt.Sprintf("%02d-%s", i, c.point), func(t *testing.T) {
					t.Parallel()
					runCrash(t, bin, c, dsn(t))
				})
			}
		})
	}
}

func runCrash(t *testing.T, bin string, c crashCase, dsn string) {
	dir, ns := t.TempDir(), apitest.Namespace()
	if c.setup != nil {
		serveInProcess(t, dir, dsn, ns, func(w *world) { c.setup(t, w) })
	}

	child := startChild(t, bin, dir, dsn, ns, c.point)
	if err := c.act(child.client); err == nil && !c.answers {
		t.Fatalf("the request answered: the fault point %s was not reached", c.point)
	}
	child.waitKilled(t)

	serveInProcess(t, dir, dsn, ns, func(w *world) {
		t.Logf("%s: healthy %s after the restart", c.point, w.healthyAfter.Round(time.Millisecond))
		w.checkAgreement(t)
		_, err := w.app.Store.GetValidator(context.Background(), "v")
		if exists := err == nil; exists != c.exists {
			t.Errorf("validator v after recovery: got exists=%v (%v), want %v", exists, err, c.exists)
		}
		if c.check != nil {
			c.check(t, w)
		}
	})
	if left, _ := filepath.Glob(filepath.Join(dir, "*", ".*-*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// world is a server running in this process on a data directory, with what
// the test needs to look inside it.
type world struct {
	app          *app.App
	client       *managementapi.ClientWithResponses
	dir          string
	healthyAfter time.Duration
}

// serveInProcess runs the server as `serve` would (App.Run) until f returns:
// the embedded default on the test process's control plane, in namespace ns.
func serveInProcess(t testing.TB, dir, dsn, ns string, f func(w *world)) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.DatabaseDSN, cfg.Namespace = dir, dsn, ns
	logs := &apitest.Buffer{}
	plane := apitest.ControlPlane(t)
	start := time.Now()
	// Several servers run one after another in this process: their
	// Managers register controllers of the same names.
	skip := true
	a, err := app.Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)), "crashtest",
		app.WithControlPlane(plane), app.With(func(o *manager.Options) { o.Controller.SkipNameValidation = &skip }))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()
	waitHealthy(t, base, done)
	w := &world{app: a, client: client(t, base, dir), dir: dir, healthyAfter: time.Since(start)}
	f(w)
	if t.Failed() {
		t.Logf("server log:\n%s", logs.String())
	}
}

func client(t testing.TB, base, dir string) *managementapi.ClientWithResponses {
	t.Helper()
	issuer, err := auth.OpenDevIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	token, err := issuer.Issue(auth.DevSubject, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := managementapi.NewClientWithResponses(base, managementapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitHealthy waits until the server at base reports UP; done, when not nil,
// delivers the server's Run error should it stop first.
func waitHealthy(t testing.TB, base string, done chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case err := <-done:
			done <- err // for the caller's deferred wait
			t.Fatalf("server at %s stopped before it was healthy: %v", base, err)
		default:
		}
		r, err := hc.Get(base + "/actuator/health")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server at %s: not healthy in time (%v)", base, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// faultBinary starts making the test binary the server processes run and
// returns a wait for its path: this binary when it was built with the fault
// points (-tags faultpoints), else one built so. Fault points are compiled
// into no other build (package faultpoint).
func faultBinary(t *testing.T) (wait func() string) {
	t.Helper()
	if faultpoint.Enabled {
		return func() string { return os.Args[0] }
	}
	bin := filepath.Join(t.TempDir(), "crashtest")
	start := time.Now()
	cmd := exec.Command("go", "test", "-c", "-tags", "faultpoints", "-o", bin, ".")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() string {
		t.Helper()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("go test -c -tags faultpoints: %v\n%s", err, out.String())
		}
		t.Logf("built the server with its fault points in %s", time.Since(start).Round(time.Second))
		return bin
	}
}

// goCommand runs the go command in this package's directory and returns its
// output.
func goCommand(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var stderr []byte
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = exit.Stderr
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// child is the server as a process of its own, armed to die at a fault point.
type child struct {
	cmd    *exec.Cmd
	client *managementapi.ClientWithResponses
	out    *apitest.Buffer
}

func startChild(t *testing.T, bin, dir, dsn, ns, point string) *child {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--log.level", "warn", "--api.namespace", ns)
	cmd.Env = append(os.Environ(), childVariable+"=1", faultVariable+"="+point, "VM_DATABASE_DSN="+dsn, planeVariable+"="+apitest.ControlPlaneKubeconfig(t))
	out := &apitest.Buffer{}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, out: out}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	addr := make(chan string, 1)
	var once sync.Once
	go func() {
		docs := regexp.MustCompile(`Docs: http://([0-9.:]+)/docs-ui.html`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := docs.FindStringSubmatch(sc.Text()); m != nil {
				once.Do(func() { addr <- m[1] })
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-addr:
		base := "http://" + a
		waitHealthy(t, base, nil)
		c.client = client(t, base, dir)
	case <-time.After(60 * time.Second):
		t.Fatalf("the server process did not start; its log:\n%s", out.String())
	}
	return c
}

// waitKilled asserts the process died of SIGKILL at its fault point.
func (c *child) waitKilled(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("server process: got %v, want killed", err)
		}
		if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("server process: got %v, want SIGKILL; its log:\n%s", err, c.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("server process still running; its log:\n%s", c.out.String())
	}
}

// inspector reads cluster objects as stored, from the API server.
type inspector struct {
	api       ctrlclient.Reader
	namespace string
}

func (w *world) inspector() inspector {
	return inspector{api: w.app.Manager().GetAPIReader(), namespace: w.app.Config.Namespace}
}

// Resource is the Validator resource as stored.
func (i inspector) Resource(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cluster.ValidatorGVK)
	return u, i.api.Get(ctx, types.NamespacedName{Namespace: i.namespace, Name: name}, u)
}

// BackupCronJob is the validator's backup CronJob; absent: an error
// apierrors.IsNotFound tells.
func (i inspector) BackupCronJob(ctx context.Context, validator string) (*batchv1.CronJob, error) {
	cj := &batchv1.CronJob{}
	return cj, i.api.Get(ctx, types.NamespacedName{Namespace: i.namespace, Name: cluster.BackupCronJobName(validator)}, cj)
}

// checkAgreement: every record is complete and is what the cluster runs,
// and nothing in the cluster or the identity provider lacks a record.
func (w *world) checkAgreement(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	insp := w.inspector()
	names, err := w.app.Store.ValidatorNames(ctx, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, name := range names {
		in, err := w.app.Store.ValidatorIntent(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		v := in.Validator
		recorded[v.Name] = true
		if v.PendingSecrets != "" || v.ProvisionError != "" {
			t.Errorf("%s: record not provisioned after recovery (pending secrets or a provisioning error)", v.Name)
		}
		res, err := insp.Resource(ctx, v.Name)
		if err != nil {
			t.Errorf("%s: Validator resource: %v", v.Name, err)
			continue
		}
		var want map[string]any
		json.Unmarshal(v.Spec, &want)
		// The resource is applied typed: an empty list is not sent.
		apitest.DropEmptyLists(want)
		got, _ := res.Object["spec"].(map[string]any)["config"].(map[string]any)
		if !v.CustomAuth {
			// Without custom auth the resource carries the identity
			// provider's clients, not the record's (docs/decisions.md).
			auth, _ := got["auth"].(map[string]any)
			if auth["ledgerApiUser"] == nil || auth["walletUser"] == nil || auth["audience"] == nil {
				t.Errorf("%s: resource auth %v, want the identity provider's clients", v.Name, auth)
			}
			got, want = withoutKey(got, "auth"), withoutKey(want, "auth")
		}
		if !jsonEqual(got, want) {
			t.Errorf("%s: resource config %v, want the record's %v", v.Name, got, want)
		}
		_, pruned, _ := unstructured.NestedMap(res.Object, "spec", "participantPruningSchedule")
		if pruned != (in.Prune != nil) {
			t.Errorf("%s: pruning schedule in the resource %v, in the record %v", v.Name, pruned, in.Prune != nil)
		}
		cj, err := insp.BackupCronJob(ctx, v.Name)
		switch {
		case in.Backup == nil && !apierrors.IsNotFound(err):
			t.Errorf("%s: backup CronJob present (%v) without a schedule", v.Name, err)
		case in.Backup != nil && err != nil:
			t.Errorf("%s: backup CronJob: %v, want one for the recorded schedule", v.Name, err)
		case in.Backup != nil && (cj.Spec.Schedule != in.Backup.Cron || (cj.Spec.Suspend != nil && *cj.Spec.Suspend) != in.Backup.Deleted):
			t.Errorf("%s: backup CronJob %s suspended=%v, record %s deleted=%v", v.Name, cj.Spec.Schedule, *cj.Spec.Suspend, in.Backup.Cron, in.Backup.Deleted)
		}
		if !v.CustomAuth && !slicesContains(w.users(t), strings.ToLower(v.Name)+"_walletuser") {
			t.Errorf("%s: no wallet user", v.Name)
		}
	}
	managed, err := w.app.Cluster.ManagedValidators()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range managed {
		if !recorded[name] {
			t.Errorf("%s: Validator resource without a record", name)
		}
	}
}

// wantUsers asserts the wallet users the identity provider holds.
func (w *world) wantUsers(t *testing.T, want ...string) {
	t.Helper()
	if got := w.users(t); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("wallet users: got %v, want %v", got, want)
	}
}

func (w *world) users(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(w.dir, "idp", "users.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Users []struct{ Username string } }
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range st.Users {
		out = append(out, u.Username)
	}
	return out
}

func (w *world) imageTag(t *testing.T, name string) string {
	t.Helper()
	res, err := w.inspector().Resource(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	tag, _, _ := unstructured.NestedString(res.Object, "spec", "config", "imageTag")
	return tag
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// BenchmarkRestartConverges measures how long a restarted server takes to
// report healthy, that is to open the database and the embedded cluster,
// sync the caches and reconcile every validator once, with 1,000 validators
// (one of them left half-created by a crash).
func BenchmarkRestartConverges(b *testing.B) {
	dir := b.TempDir()
	ns := apitest.Namespace()
	serveInProcess(b, dir, "", ns, func(w *world) {
		for i := range 1000 {
			v := apitest.ValidatorPayload(fmt.Sprintf("v%04d", i))
			v.CustomAuth = ptr(true)
			if r, err := w.client.CreateValidatorWithResponse(context.Background(), v); err != nil || r.StatusCode() != http.StatusCreated {
				b.Fatalf("seed %d: %v %v", i, statusOf(r), err)
			}
		}
	})
	for b.Loop() {
		serveInProcess(b, dir, "", ns, func(*world) {})
	}
}

// withoutKey is a copy of m without key.
func withoutKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
