package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/validator-manager/validator-manager/impl/embedded/engine"
)

// The helper modes re-run this test binary as a "server" that starts an
// engine, so that a test can kill it the way an operator's kill -9 would.
const (
	helperEnv = "ENGINE_TEST_HELPER" // "server" or "start-stop"
	dirEnv    = "ENGINE_TEST_DIR"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "server":
		os.Exit(helperServer(true))
	case "start-stop":
		os.Exit(helperServer(false))
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode")
	os.Exit(2)
}

// helperServer starts an engine on $ENGINE_TEST_DIR, creates the ConfigMap
// "survivor", prints "READY <pids as JSON>" and then blocks (forever when
// block, else it stops the engine and exits).
func helperServer(block bool) int {
	ctx := context.Background()
	dir := os.Getenv(dirEnv)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	e, err := engine.Start(ctx, engine.Options{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 1
	}
	core := kubernetes.NewForConfigOrDie(e.RESTConfig())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := core.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		fmt.Fprintln(os.Stderr, "create:", err)
		e.Stop()
		return 1
	}
	// A spawned node, which must die with the server too.
	if err := e.Spawn("node", sleepBin(), "600"); err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		e.Stop()
		return 1
	}
	b, _ := json.Marshal(e.PIDs())
	fmt.Printf("READY %s\n", b)
	if block {
		select {}
	}
	e.Stop()
	return 0
}

func binaries(t *testing.T) string {
	t.Helper()
	dir := engine.DefaultBinDir()
	for _, b := range []string{engine.Etcd, engine.APIServer, engine.ControllerManager} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Skipf("engine binaries absent (%s missing in %s): run `make engine` or set KUBEBUILDER_ASSETS", b, dir)
		}
	}
	return dir
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func TestMissingBinariesNameMakeEngine(t *testing.T) {
	_, err := engine.Start(context.Background(), engine.Options{Dir: t.TempDir(), BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make engine") {
		t.Fatalf("got %v, want an error naming `make engine`", err)
	}
}

// TestRestartKeepsObjects: a fresh directory starts, every part is there
// (kubeconfig, CRDs, controllers, private files), and a second start on the
// same directory finds the objects of the first.
func TestRestartKeepsObjects(t *testing.T) {
	binaries(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cluster")
	kubeconfig := filepath.Join(filepath.Dir(dir), "kubeconfig")
	opts := engine.Options{Dir: dir, Kubeconfig: kubeconfig, Logger: testLogger(t)}

	began := time.Now()
	e, err := engine.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	cold := time.Since(began)
	t.Cleanup(e.Stop)
	if !e.Fresh() {
		t.Error("Fresh() false on a new directory")
	}
	t.Logf("cold start: %s; RSS after start: %s", cold.Round(time.Millisecond), rss(e.PIDs()))

	// The operator's kubeconfig reaches the server.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	core := kubernetes.NewForConfigOrDie(cfg)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := core.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The CRDs are served.
	dyn := dynamic.NewForConfigOrDie(e.RESTConfig())
	for _, r := range []string{"validators", "applications"} {
		gvr := schema.GroupVersionResource{Group: "validator-manager.io", Version: "v1alpha1", Resource: r}
		if _, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list %s: %v", r, err)
		}
	}
	// The controller manager runs: the service account controller makes
	// the default namespace's account.
	waitFor(t, 30*time.Second, "default service account", func() bool {
		_, err := core.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	// Private files.
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{dir, 0o700}, {filepath.Join(dir, "pki"), 0o700}, {filepath.Join(dir, "etcd"), 0o700},
		{filepath.Join(dir, "pki", "ca.key"), 0o600}, {filepath.Join(dir, "pki", "admin.key"), 0o600},
		{filepath.Join(dir, "pki", "sa.key"), 0o600}, {kubeconfig, 0o600},
	} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := fi.Mode().Perm(); got != f.mode {
			t.Errorf("%s: mode %o, want %o", f.path, got, f.mode)
		}
	}
	for _, n := range []string{engine.Etcd, engine.APIServer, engine.ControllerManager} {
		if fi, err := os.Stat(filepath.Join(dir, "logs", n+".log")); err != nil || fi.Size() == 0 {
			t.Errorf("log of %s: %v (want a non-empty file)", n, err)
		}
	}
	caBefore, _ := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))

	stopped := time.Now()
	e.Stop()
	t.Logf("stop: %s", time.Since(stopped).Round(time.Millisecond))
	select {
	case <-e.Done():
	default:
		t.Error("Done not closed after Stop")
	}

	began = time.Now()
	e2, err := engine.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e2.Stop)
	if e2.Fresh() {
		t.Error("Fresh() true on a directory holding a cluster")
	}
	t.Logf("warm start: %s; RSS after start: %s", time.Since(began).Round(time.Millisecond), rss(e2.PIDs()))
	cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig) // rewritten: the port changed
	if err != nil {
		t.Fatal(err)
	}
	got, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("after restart: data %v, want k=v", got.Data)
	}
	// Unchanged definitions are not applied again: the restarted API
	// server (its counters start with it) saw no write to a CRD. An apply
	// that changes nothing leaves the resource version alone, so the
	// requests are what is counted.
	metrics, err := kubernetes.NewForConfigOrDie(e2.RESTConfig()).RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "apiserver_request_total{") && strings.Contains(line, `resource="customresourcedefinitions"`) &&
			!strings.Contains(line, `verb="GET"`) && !strings.Contains(line, `verb="LIST"`) && !strings.Contains(line, `verb="WATCH"`) {
			t.Errorf("a restart over unchanged CRDs wrote them: %s", line)
		}
	}
	if caAfter, _ := os.ReadFile(filepath.Join(dir, "pki", "ca.crt")); string(caAfter) != string(caBefore) {
		t.Error("the CA changed across a restart; kubeconfigs handed out earlier would stop working")
	}
}

// TestChildrenDieWithKilledServer: kill -9 of the server takes etcd,
// kube-apiserver and kube-controller-manager with it, and a new start on
// the same directory works and has the objects.
func TestChildrenDieWithKilledServer(t *testing.T) {
	binaries(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	cmd, pids := startHelper(t, dir, nil)
	if len(pids) != 4 {
		t.Fatalf("children: %v, want the control plane's 3 and a spawned node", pids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for name, pid := range pids {
		waitFor(t, 10*time.Second, name+" gone", func() bool { return !alive(pid) })
	}
	// The same directory starts again with the objects.
	ctx := context.Background()
	e, err := engine.Start(ctx, engine.Options{Dir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	core := kubernetes.NewForConfigOrDie(e.RESTConfig())
	if _, err := core.CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{}); err != nil {
		t.Fatalf("after kill -9 and restart: %v", err)
	}
}

// TestStaleEtcdIsReplaced: an etcd left running on the directory by
// anything (here: started by hand, without a parent-death signal) is killed
// at start instead of holding the data directory; the cluster's objects are
// still there.
func TestStaleEtcdIsReplaced(t *testing.T) {
	bin := binaries(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cluster")
	opts := engine.Options{Dir: dir, Logger: testLogger(t)}
	first, err := engine.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default"}}
	if _, err := kubernetes.NewForConfigOrDie(first.RESTConfig()).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first.Stop()

	stale := exec.Command(filepath.Join(bin, engine.Etcd), "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:0", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:0")
	stale.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := stale.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = stale.Wait(); close(exited) }()
	t.Cleanup(func() { _ = stale.Process.Kill() })
	time.Sleep(time.Second) // let it take the directory's lock
	if !alive(stale.Process.Pid) {
		t.Fatal("the stand-in stale etcd did not start")
	}

	e, err := engine.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the stale etcd still runs")
	}
	if e.Fresh() {
		t.Error("Fresh() true on a directory holding a cluster")
	}
	if _, err := kubernetes.NewForConfigOrDie(e.RESTConfig()).CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("after replacing the stale etcd: %v", err)
	}
}

// TestInterruptedFirstStartIsRedone: a data directory that etcd began but
// never finished initialising (the server killed in its first second) is
// started over instead of leaving an etcd that never becomes ready.
func TestInterruptedFirstStartIsRedone(t *testing.T) {
	binaries(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	wal := filepath.Join(dir, "etcd", "member", "wal")
	if err := os.MkdirAll(wal, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wal, "0000000000000000-0000000000000000.wal"), []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Start(context.Background(), engine.Options{Dir: dir, Logger: testLogger(t), StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if !e.Fresh() {
		t.Error("Fresh() false, want true: no start had completed on the directory")
	}
}

// TestStartsWithoutDefaultRoute: in a network namespace holding only
// loopback (unshare -rn), the engine starts and serves.
func TestStartsWithoutDefaultRoute(t *testing.T) {
	binaries(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare not installed: cannot make a namespace without a default route")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip not installed: cannot bring loopback up in the namespace")
	}
	if err := exec.Command("unshare", "-rn", "true").Run(); err != nil {
		t.Skipf("unshare -rn refused here (%v): user namespaces unavailable", err)
	}
	dir := filepath.Join(t.TempDir(), "cluster")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "-rn", "sh", "-c", `ip link set lo up && test -z "$(ip route show default)" && exec "$0" -test.run=^$`, self)
	cmd.Env = append(os.Environ(), helperEnv+"=start-stop", dirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "READY ") {
		t.Fatalf("in a namespace with only loopback: %v\n%s", err, out)
	}
}

// startHelper runs this binary as a server starting an engine on dir and
// returns once it printed READY.
func startHelper(t *testing.T, dir string, extraEnv []string) (*exec.Cmd, map[string]int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"=server", dirEnv+"="+dir), extraEnv...)
	cmd.Stderr = testWriter{t}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY ") {
				lines <- strings.TrimPrefix(sc.Text(), "READY ")
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-lines:
		var pids map[string]int
		if err := json.Unmarshal([]byte(l), &pids); err != nil {
			t.Fatal(err)
		}
		return cmd, pids
	case <-time.After(90 * time.Second):
		t.Fatal("helper server not ready within 90s")
	}
	return nil, nil
}

// sleepBin is sleep(1), which stands for a spawned node.
func sleepBin() string {
	p, err := exec.LookPath("sleep")
	if err != nil {
		return "/bin/sleep"
	}
	return p
}

func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// rss reads each child's resident set size.
func rss(pids map[string]int) string {
	var parts []string
	for _, n := range []string{engine.Etcd, engine.APIServer, engine.ControllerManager} {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[n]), "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				parts = append(parts, n+" "+strings.Join(strings.Fields(l)[1:], " "))
			}
		}
	}
	return strings.Join(parts, ", ")
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
