package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
)

// TestEmbeddedDefault is the newcomer's path: `serve` on a fresh data
// directory prints a token that the server accepts, `token` prints only
// another accepted token, and the server shuts down cleanly on cancel.
func TestEmbeddedDefault(t *testing.T) {
	dataDir := t.TempDir()
	s := startServe(t, "--data-dir", dataDir, "--cluster.node.pods", "5000")
	out, logs, done, cancel, base := s.out, s.logs, s.done, s.cancel, s.base
	startToken := printedToken(t, out.String())
	// The command that prints another token is the binary as it was run
	// (bin/validator-manager under make run), not a name on no PATH.
	if want := "`" + os.Args[0] + " token --data-dir " + dataDir + "`"; !strings.Contains(out.String(), want) {
		t.Errorf("serve's banner does not name %s; output: %s", want, out.String())
	}

	tokenOut := &bytes.Buffer{}
	tokenCmd := root()
	tokenCmd.SetOut(tokenOut)
	tokenCmd.SetArgs([]string{"token", "--data-dir", dataDir})
	if err := tokenCmd.Execute(); err != nil {
		t.Fatal(err)
	}
	printedToken := strings.TrimSpace(tokenOut.String())
	if strings.ContainsAny(printedToken, " \n") || !strings.HasPrefix(printedToken, "eyJ") {
		t.Fatalf("token printed more than a token: %q", tokenOut.String())
	}

	// Health is UP once the cluster caches have synced and the first
	// reconcile is done: soon after start. (Release 2.0's reads answer 503
	// until the caches have synced.)
	waitHealthy(t, base, done)
	for _, token := range []string{startToken, printedToken} {
		for path, want := range map[string]int{"/api/validators": http.StatusOK, "/api/v1/validators": http.StatusOK} {
			if got := status(t, base+path, token); got != want {
				t.Errorf("%s with a printed token: got %d, want %d from the handler (token admitted)", path, got, want)
			}
		}
	}
	if got := status(t, base+"/api/v1/validators", "not-a-token"); got != http.StatusUnauthorized {
		t.Errorf("bad token: got %d, want 401", got)
	}
	t.Run("a validator becomes workloads on the control plane", func(t *testing.T) {
		checkWorkloads(t, base, startToken, dataDir)
	})
	t.Run("a new database password reaches the running database", func(t *testing.T) {
		checkPasswordEdit(t, base, startToken, dataDir)
	})
	t.Run("a validator without custom auth gets its clients and Secrets", func(t *testing.T) {
		checkAuth(t, base, startToken, dataDir)
	})
	t.Run("recover --dry-run says what it would do", func(t *testing.T) {
		checkRecoverDryRun(t, base, startToken, dataDir)
	})
	t.Run("the simulated node is a child process and serves the pod metrics", func(t *testing.T) {
		checkNodeProcess(t, base, startToken, dataDir)
	})
	t.Run("a validator that does not fit on the node stays PENDING, saying why", func(t *testing.T) {
		checkNoRoom(t, base, startToken, dataDir)
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after cancel: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not shut down")
	}
	// The last line says that shutdown is over and how long it took; the
	// expected 503s of health while the server starts are not errors.
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"msg":"validator-manager stopped"`) || !strings.Contains(last, `"shutdown_seconds":`) {
		t.Errorf("last log line: got %s, want validator-manager stopped with shutdown_seconds", last)
	}
	for _, l := range lines {
		if strings.Contains(l, `"level":"ERROR"`) && strings.Contains(l, "/actuator/health") {
			t.Errorf("health during start logged as an error: %s", l)
		}
	}
	// Its children went with it: nothing holds etcd's data directory.
	if out, _ := exec.Command("pgrep", "-f", filepath.Join(dataDir, "cluster")).Output(); len(out) > 0 {
		t.Fatalf("control plane processes outlived the server: %s", out)
	}
}

// checkNodeProcess: the simulated node runs as the server's child (its
// command line names the node's kubeconfig in the data directory), declares
// the room the configuration gives it (cluster.node.pods 5000, the default
// CPUs and memory), and the sample Application's usage, which it serves,
// reaches release 2.0.
func checkNodeProcess(t *testing.T, base, token, dataDir string) {
	node := nodesim.Command + " --kubeconfig=" + filepath.Join(dataDir, "cluster", "node.kubeconfig")
	out, _ := exec.Command("pgrep", "-f", "-P", strconv.Itoa(os.Getpid()), node).Output()
	if len(strings.Fields(string(out))) != 1 {
		t.Errorf("processes %q of this server: got %q, want one", node, out)
	}
	rc := adminConfig(t, dataDir)
	n, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Nodes().Get(context.Background(), "embedded-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := n.Status.Allocatable; c.Pods().Value() != 5000 || c.Cpu().Value() != 64 || c.Memory().String() != "256Gi" {
		t.Errorf("the node's allocatable: got %v, want pods 5000, cpu 64, memory 256Gi", c)
	}
	var m struct {
		MetricsAvailable bool `json:"metricsAvailable"`
		CPU              struct {
			Usage *int64 `json:"usageMillicores"`
		} `json:"cpu"`
	}
	eventually(t, 60*time.Second, "the sample application's usage", func() bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/applications/"+nodesim.SampleApplication+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&m) == nil && m.MetricsAvailable && m.CPU.Usage != nil
	})
}

// adminConfig is the administrator's configuration of the embedded
// default's control plane, from the kubeconfig the server wrote in its
// data directory (as `kubectl --kubeconfig data/kubeconfig` reads it).
func adminConfig(t *testing.T, dataDir string) *rest.Config {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		t.Fatalf("the kubeconfig the server wrote: %v", err)
	}
	return rc
}

// served is a `serve` run in this process.
type served struct {
	base      string // http://127.0.0.1:<port>
	out, logs *apitest.Buffer
	done      chan error // Execute's result
	cancel    context.CancelFunc
}

// startServe runs `serve --listen 127.0.0.1:0 args...` and returns once it
// printed its address: the embedded control plane starts first (etcd,
// kube-apiserver, kube-controller-manager), seconds, more on a loaded
// machine.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	// Several servers run one after another in this process: their
	// Managers register controllers of the same names.
	prev, skip := appOptions, true
	appOptions = append(appOptions[:len(prev):len(prev)], app.With(func(o *manager.Options) { o.Controller.SkipNameValidation = &skip }))
	t.Cleanup(func() { appOptions = prev })
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{out: &apitest.Buffer{}, logs: &apitest.Buffer{}, done: make(chan error, 1), cancel: cancel}
	go func() {
		cmd := root()
		cmd.SetOut(s.out)
		cmd.SetErr(s.logs)
		cmd.SetArgs(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
		s.done <- cmd.ExecuteContext(ctx)
	}()
	addr := regexp.MustCompile(`Docs: http://([0-9.:]+)/docs-ui.html`)
	for deadline := time.Now().Add(120 * time.Second); ; {
		if printed := addr.FindStringSubmatch(s.out.String()); printed != nil {
			s.base = "http://" + printed[1]
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no address in time; output: %s", s.out.String())
		}
		select {
		case err := <-s.done:
			t.Fatalf("serve stopped early: %v; output: %s", err, s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// printedToken is the bearer token serve printed on its own line.
func printedToken(t *testing.T, out string) string {
	t.Helper()
	token := regexp.MustCompile(`(?m)^(eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$`).FindString(out)
	if token == "" {
		t.Fatalf("serve printed no bearer token; output: %s", out)
	}
	return token
}

func status(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTokenNeedsTheServersKey: in a directory without the server's key,
// `token` says where it looked and creates nothing.
// A second server on a taken port stops before it creates anything in its
// data directory.
func TestTakenPortLeavesDataDirAlone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dataDir := filepath.Join(t.TempDir(), "data")
	cmd := root()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"serve", "--listen", ln.Addr().String(), "--data-dir", dataDir})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("serve on a taken port: got %v, want address already in use", err)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the data directory was created (%v)", err)
	}
}

func TestTokenNeedsTheServersKey(t *testing.T) {
	dir := t.TempDir()
	cmd := root()
	out := &bytes.Buffer{}
	cmd.SetOut(out)
	cmd.SetArgs([]string{"token", "--data-dir", dir})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "no development signing key at "+dir) {
		t.Fatalf("got %v (output %q), want a refusal naming %s", err, out.String(), dir)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("token created %v", entries)
	}
}

// TestTokenClaims: --subject and --claims put what roles map from into the
// token, which verifies with the role it maps to; --claims must be an object.
func TestTokenClaims(t *testing.T) {
	dir := t.TempDir()
	issuer, err := auth.OpenDevIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := root()
	out := &bytes.Buffer{}
	cmd.SetOut(out)
	cmd.SetArgs([]string{"token", "--data-dir", dir, "--subject", "alice", "--claims", `{"realm_access":{"roles":["vm-viewer"]}}`})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	roles, err := auth.ParseRoles("realm:vm-viewer", "", "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.NewVerifier(issuer.PublicKeys(), auth.DevIssuerName, "").WithRoles(roles).Verify(context.Background(), strings.TrimSpace(out.String()))
	if err != nil || p.Subject != "alice" || p.Role != auth.RoleViewer {
		t.Fatalf("got %+v %v, want alice as viewer", p, err)
	}
	cmd = root()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"token", "--data-dir", dir, "--claims", `["vm-viewer"]`})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--claims: want a JSON object") {
		t.Fatalf("claims as an array: got %v, want a refusal", err)
	}
}

// TestTokenHelp lists token's own flags, not serve's.
func TestTokenHelp(t *testing.T) {
	cmd := root()
	out := &bytes.Buffer{}
	cmd.SetOut(out)
	cmd.SetArgs([]string{"token", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--data-dir", "--token.ttl", "--config"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %s:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"--listen", "--cluster.mode", "--server.request-timeout"} {
		if strings.Contains(out.String(), unwanted) {
			t.Errorf("help lists serve's %s:\n%s", unwanted, out)
		}
	}
}

// TestFlagHelp: an unknown flag names the nearest one, and help shows
// boolean flags as they are typed.
func TestFlagHelp(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--port", "9090"}, "unknown flag: --port (did you mean --listen?)"},
		{[]string{"recover", "--dryrun"}, "unknown flag: --dryrun (did you mean --dry-run?)"},
		{[]string{"token", "--namespace", "x"}, "setting api.namespace has no flag here; its environment variable is VM_API_NAMESPACE"},
	}
	for _, tc := range cases {
		cmd := root()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
	for _, sub := range []string{"serve", "recover"} {
		var help bytes.Buffer
		cmd := root()
		cmd.SetOut(&help)
		cmd.SetArgs([]string{sub, "--help"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(help.String(), "[=true|false]") || !strings.Contains(help.String(), "-h, --help ") {
			t.Errorf("%s --help shows booleans with [=true|false]:\n%s", sub, help.String())
		}
	}
	// A plain boolean flag still takes a value.
	cmd := root()
	serve, _, _ := cmd.Find([]string{"serve"})
	if err := serve.ParseFlags([]string{"--api.metrics.public=false", "--api.metrics.public"}); err != nil {
		t.Fatal(err)
	}
	if got := serve.Flags().Lookup("api.metrics.public").Value.String(); got != "true" {
		t.Errorf("--api.metrics.public: got %s, want true", got)
	}
}

// TestStrayArgumentsRefused: no command takes arguments, so one is a
// mistake, most often a boolean flag's value given after a space
// (--api.metrics.public false), which pflag leaves as an argument while the
// flag stands alone for true. It is refused before anything is read.
func TestStrayArgumentsRefused(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		// log.level loud: were the argument ignored, serve would stop at the
		// configuration instead, before it starts anything.
		{[]string{"serve", "--log.level", "loud", "--api.metrics.public", "false"}, `validator-manager serve takes no arguments, got "false" (a boolean flag takes its value after '=': --flag=false)`},
		{[]string{"token", "--data-dir", dir, "extra"}, `validator-manager token takes no arguments, got "extra"`},
		{[]string{"version", "extra"}, `validator-manager version takes no arguments, got "extra"`},
		{[]string{"recover", "--validator", "v", "--timestamp", "2025-07-01T10:30:00.000Z", "--dry-run", "true"}, `validator-manager recover takes no arguments, got "true" (a boolean flag`},
	}
	for _, tc := range cases {
		cmd := root()
		out := &bytes.Buffer{}
		cmd.SetOut(out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("%v printed %q", tc.args, out)
		}
	}
}

// The production binary links no client-go fakes: it runs on a real API
// server (the embedded default's or a cluster's).
func TestBinaryLinksNoFakes(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "/fake") {
			t.Errorf("the binary links %s", pkg)
		}
	}
}

// The binary links no informer factory beside the controller-runtime
// Manager's cache: every watch of the server goes through that one cache,
// and the embedded default's simulated node (a process of its own) has a
// controller-runtime cache too. client-go's factory is linked only by its
// leader election (coordinated election's lease candidates), which the
// Manager does not use.
func TestBinaryLinksNoInformerFactory(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	factory := regexp.MustCompile(`^k8s\.io/client-go/(informers|dynamic/dynamicinformer|metadata/metadatainformer)(/|$)`)
	allowed := map[string]bool{"k8s.io/client-go/tools/leaderelection": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if factory.MatchString(pkg) || allowed[pkg] {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if factory.MatchString(imp) {
				t.Errorf("%s imports the informer factory %s", pkg, imp)
			}
		}
	}
}
