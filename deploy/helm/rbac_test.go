package helm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
)

// grants flattens RBAC rules into "group/resource verb" lines.
func grants(rules []rbacv1.PolicyRule) sets.Set[string] {
	out := sets.New[string]()
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out.Insert(g + "/" + res + " " + v)
				}
			}
		}
	}
	return out
}

// chartModeValues turn chart mode on (config.splice.charts).
var chartModeValues = map[string]any{"config": map[string]any{"splice": map[string]any{"charts": "oci://registry.example.test/helm"}}}

// chartRoles is what the chart's rbac.yaml grants with values: in the
// namespace, and cluster-wide.
func chartRoles(t *testing.T, values map[string]any) (namespaced, clusterWide sets.Set[string]) {
	t.Helper()
	out, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	namespaced, clusterWide = sets.New[string](), sets.New[string]()
	for _, doc := range strings.Split(out["validator-manager/templates/rbac.yaml"], "\n---") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatal(err)
		}
		switch r.Kind {
		case "Role":
			namespaced = namespaced.Union(grants(r.Rules))
		case "ClusterRole":
			clusterWide = clusterWide.Union(grants(r.Rules))
		}
	}
	return namespaced, clusterWide
}

// deployRBAC reads the Roles and ClusterRoles of deploy/rbac (a ClusterRole
// read into the same type: their fields are the same).
func deployRBAC(t *testing.T) []rbacv1.Role {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "rbac", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy/rbac: %v, %d files", err, len(files))
	}
	var out []rbacv1.Role
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(raw), "\n---") {
			var r rbacv1.Role
			if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if r.Kind != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// The chart grants what deploy/rbac grants, no more and no less: the files
// there say per part of the server what it calls and why.
func TestChartRoleMatchesDeployRBAC(t *testing.T) {
	namespaced, clusterWide := sets.New[string](), sets.New[string]()
	for _, r := range deployRBAC(t) {
		switch r.Kind {
		case "Role":
			namespaced = namespaced.Union(grants(r.Rules))
		case "ClusterRole":
			clusterWide = clusterWide.Union(grants(r.Rules))
		}
	}
	// Chart mode: every part of the server runs.
	chartNS, chartCluster := chartRoles(t, chartModeValues)
	for _, d := range []struct {
		scope       string
		chart, want sets.Set[string]
	}{{"Role", chartNS, namespaced}, {"ClusterRole", chartCluster, clusterWide}} {
		if extra := sets.List(d.chart.Difference(d.want)); len(extra) > 0 {
			t.Errorf("the chart's %s grants what deploy/rbac does not: %v", d.scope, extra)
		}
		if missing := sets.List(d.want.Difference(d.chart)); len(missing) > 0 {
			t.Errorf("the chart's %s lacks what deploy/rbac grants: %v", d.scope, missing)
		}
	}
}

// Without chart mode the chart grants nothing in other namespaces but the
// storage classes' reads: chart-mode.yaml's ClusterRole only with
// config.splice.charts.
func TestChartGrantsReleasesInChartModeOnly(t *testing.T) {
	var releases sets.Set[string]
	for _, r := range deployRBAC(t) {
		if r.Name == "validator-manager-releases" {
			releases = grants(r.Rules)
		}
	}
	if releases.Len() == 0 {
		t.Fatal("deploy/rbac/chart-mode.yaml: no ClusterRole validator-manager-releases")
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   bool
	}{{"built-in layout", nil, false}, {"chart mode", chartModeValues, true}} {
		_, clusterWide := chartRoles(t, tc.values)
		if got := clusterWide.IsSuperset(releases); got != tc.want {
			t.Errorf("%s: the chart's ClusterRoles %v, chart mode's granted %v, want %v", tc.name, sets.List(clusterWide), got, tc.want)
		}
	}
}

// logSink keeps every log line of the servers and of client-go (klog: its
// informers report a refused list or watch there), for the whole test
// process: klog's and controller-runtime's loggers are set once (the
// latter keeps the first it is given), and each test reads the lines
// written since its mark.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var (
	sink        = &logSink{}
	sinkHandler slog.Handler
	sinkOnce    sync.Once
)

// logs is the process's sink and the handler that writes to it.
func logs() (*logSink, slog.Handler) {
	sinkOnce.Do(func() {
		sinkHandler = slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelInfo})
		klog.SetLogger(logr.FromSlogHandler(sinkHandler))
		ctrllog.SetLogger(logr.FromSlogHandler(sinkHandler))
	})
	return sink, sinkHandler
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if testing.Verbose() {
		os.Stderr.Write(p)
	}
	return s.buf.Write(p)
}

// mark is where the lines a test is to read begin.
func (s *logSink) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Len()
}

// lines are the lines written since from that contain substr (any case).
func (s *logSink) lines(from int, substr string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.buf.String()[from:], "\n") {
		if strings.Contains(strings.ToLower(l), substr) {
			out = append(out, l)
		}
	}
	return out
}

// impersonating is a kubeconfig file (and its rest.Config) that reaches the
// API server as user (the API server adds a ServiceAccount's groups,
// system:serviceaccounts and system:authenticated).
func impersonating(t *testing.T, user string) (string, *rest.Config) {
	t.Helper()
	kc, err := clientcmd.Load(adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = user
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, rc
}

// replica is one running server.
type replica struct {
	app        *app.App
	url, token string
}

// startReplicas runs two servers (cluster.mode=kubeconfig through
// kubeconfig, one database, edit changing their configuration unless nil,
// opts their wiring) in ns until the test ends, and returns them once one
// leads.
func startReplicas(t *testing.T, ns, kubeconfig string, edit func(*config.Config), opts ...app.Option) (leader, follower replica) {
	t.Helper()
	ctx := context.Background()
	_, handler := logs()
	dataDir := t.TempDir()
	start := func(name string) replica {
		cfg := config.Default()
		cfg.ClusterMode = config.ClusterKubeconfig
		cfg.Kubeconfig = kubeconfig
		cfg.Namespace = ns
		cfg.DataDir = dataDir
		cfg.OutboundAllowedHosts = "*.example.com,*.test"
		// Nothing here fails over: the lease is the server's default, so
		// that a loaded machine's slow renewal does not lose it mid-test,
		// and the grace is long enough for a loaded stop.
		cfg.ShutdownTimeout = 20 * time.Second
		cfg.LeaderElectionIdentity = name
		cfg.LeaderElectionRetryPeriod = 250 * time.Millisecond
		if edit != nil {
			edit(&cfg)
		}
		log := slog.New(handler).With("replica", name)
		// Two Managers in one process register controllers of the same names.
		skip := true
		opts := append([]app.Option{app.With(func(o *manager.Options) { o.Controller.SkipNameValidation = &skip })}, opts...)
		srv, err := app.Open(ctx, cfg, log, "test", opts...)
		if err != nil {
			t.Fatalf("%s: open: %v", name, err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			srv.Close()
			t.Fatal(err)
		}
		token, err := srv.DevToken()
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Run(runCtx, ln) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", name, err)
			}
			srv.Close()
		})
		return replica{app: srv, url: "http://" + ln.Addr().String(), token: token}
	}
	a, b := start("replica-a"), start("replica-b")
	apitest.Eventually(t, 30*time.Second, "one replica leads", func() error {
		switch {
		case a.app.Role() == app.RoleLeader && b.app.Role() == app.RoleFollower:
			leader, follower = a, b
		case b.app.Role() == app.RoleLeader && a.app.Role() == app.RoleFollower:
			leader, follower = b, a
		default:
			return fmt.Errorf("roles %s, %s", a.app.Role(), b.app.Role())
		}
		return nil
	})
	return leader, follower
}

// mayExec asks the authorizer whether user may run exec (the console,
// recovery) in ns and read its pods, and nothing beyond the namespace:
// envtest has no kubelet, so exec cannot run.
func mayExec(t *testing.T, rc *rest.Config, user, ns string) {
	t.Helper()
	saCore := kubernetes.NewForConfigOrDie(rc)
	for _, c := range []struct {
		attr authorizationv1.ResourceAttributes
		want bool
	}{
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"}, true},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"}, true},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"}, true},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Group: "metrics.k8s.io", Resource: "pods"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}, false},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Resource: "secrets"}, false},
	} {
		r, err := saCore.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &c.attr}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("%s may %s %s/%s in %s: %v, want %v", user, c.attr.Verb, c.attr.Resource, c.attr.Subresource, c.attr.Namespace, r.Status.Allowed, c.want)
		}
	}
}

// The server runs under the chart's Role and nothing else: the chart's
// ServiceAccount, Role, RoleBinding, ClusterRole and ClusterRoleBinding
// are applied for real, and two replicas (cluster.mode=kubeconfig) reach
// the API server impersonating that ServiceAccount. A validator created
// through release 1.11 on the follower is provisioned (resource, Secrets),
// the follower records a schedule, which the leader takes from the
// database's change feed and
// reconciles it (backup CronJob, workloads by server-side apply, status),
// and no log line says forbidden.
func TestServerRunsUnderChartRole(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	ctx := context.Background()
	ns := newNamespace(t, "rbac")
	out, err := renderIn(t, ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := newApplier(t, apiServer)
	for _, obj := range objects(t, out) {
		switch obj.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			if err := a.apply(ctx, ns, obj, false); err != nil {
				t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
	}

	user := "system:serviceaccount:" + ns + ":vm"
	kubeconfig, sa := impersonating(t, user)
	mayExec(t, sa, user, ns)
	sink, _ := logs()
	from := sink.mark()
	_, f := startReplicas(t, ns, kubeconfig, nil)
	follower, followerToken := f.url, f.token

	create(t, f, apitest.ValidatorPayload("acme"))
	dyn := dynamic.NewForConfigOrDie(apiServer)
	admin := kubernetes.NewForConfigOrDie(apiServer)
	validators := dyn.Resource(cluster.ValidatorResource).Namespace(ns)
	// The create answered at once; the leader provisions it.
	apitest.Eventually(t, 30*time.Second, "the leader provisions the validator", func() error {
		if _, err := validators.Get(ctx, "acme", metav1.GetOptions{}); err != nil {
			return err
		}
		secrets, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: cluster.ValidatorLabel + "=acme"})
		if err != nil || len(secrets.Items) == 0 {
			return fmt.Errorf("Secrets of the validator: %d, %v", len(secrets.Items), err)
		}
		return nil
	})
	// The follower records the schedule; the leader takes it from the
	// database's change feed and applies it. (A backup schedule needs the validator's
	// database running, which takes a kubelet envtest does not have.)
	prune := map[string]string{"cron": "0 0 20 * * ?", "maxDuration": "1h", "retention": "48h"}
	if code, body := post(t, follower, followerToken, "/api/validators/acme/prune", prune); code != http.StatusCreated {
		t.Fatalf("prune schedule through the follower: status %d: %s", code, body)
	}
	apitest.Eventually(t, 30*time.Second, "the leader reconciles the validator", func() error {
		v, err := validators.Get(ctx, "acme", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := v.Object["spec"].(map[string]any)["participantPruningSchedule"]; !ok {
			return fmt.Errorf("no spec.participantPruningSchedule yet")
		}
		deps, err := admin.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: cluster.ValidatorLabel + "=acme"})
		if err != nil || len(deps.Items) == 0 {
			return fmt.Errorf("workload Deployments: %d, %v", len(deps.Items), err)
		}
		if field(v.Object, "status", "phase") == "" {
			return fmt.Errorf("no status.phase yet: %v", v.Object["status"])
		}
		return nil
	})
	if refused := sink.lines(from, "forbidden"); len(refused) > 0 {
		t.Errorf("the API server refused the servers under the chart's Role:\n%s", strings.Join(refused, "\n"))
	}
}

// field is the string at path in obj, empty when absent.
func field(obj map[string]any, path ...string) string {
	var v any = obj
	for _, f := range path {
		m, _ := v.(map[string]any)
		v = m[f]
	}
	s, _ := v.(string)
	return s
}

// create sends a release 1.11 create of payload to r until it answers 201:
// until the leader has made the cluster's password key, a create answers
// 503 (documented: try again shortly); nothing else but 201.
func create(t *testing.T, r replica, payload any) {
	t.Helper()
	apitest.Eventually(t, 60*time.Second, "a create through "+r.url, func() error {
		code, body := post(t, r.url, r.token, "/api/validators", payload)
		switch code {
		case http.StatusCreated:
			return nil
		case http.StatusServiceUnavailable:
			return fmt.Errorf("status %d: %s", code, body)
		}
		t.Fatalf("create through %s: status %d: %s", r.url, code, body)
		return nil
	})
}

func post(t *testing.T, base, token, path string, body any) (int, string) {
	t.Helper()
	return call(t, http.MethodPost, base, token, path, body)
}

// call sends a request with body as JSON (nil: none) and returns the
// status and body of the answer.
func call(t *testing.T, method, base, token, path string, body any) (int, string) {
	t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}
