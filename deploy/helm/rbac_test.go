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

// chartRoles is what the chart's rbac.yaml grants: in the namespace, and
// cluster-wide.
func chartRoles(t *testing.T) (namespaced, clusterWide sets.Set[string]) {
	t.Helper()
	out, err := render(t, nil)
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

// The chart grants what deploy/rbac grants, no more and no less: the files
// there say per part of the server what it calls and why.
func TestChartRoleMatchesDeployRBAC(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "rbac", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy/rbac: %v, %d files", err, len(files))
	}
	namespaced, clusterWide := sets.New[string](), sets.New[string]()
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
			switch r.Kind {
			case "Role":
				namespaced = namespaced.Union(grants(r.Rules))
			case "ClusterRole":
				clusterWide = clusterWide.Union(grants(r.Rules))
			}
		}
	}
	chartNS, chartCluster := chartRoles(t)
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

// logSink keeps every log line of the servers and of client-go (klog: its
// informers report a refused list or watch there).
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
	t   *testing.T
	// done: the test has ended; what client-go's goroutines still log is
	// dropped (klog's logger stays set: clearing it races with them).
	done bool
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return len(p), nil
	}
	if testing.Verbose() {
		s.t.Log(strings.TrimSpace(string(p)))
	}
	return s.buf.Write(p)
}

func (s *logSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
}

func (s *logSink) lines(substr string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.buf.String(), "\n") {
		if strings.Contains(strings.ToLower(l), substr) {
			out = append(out, l)
		}
	}
	return out
}

// The server runs under the chart's Role and nothing else: the chart's
// ServiceAccount, Role, RoleBinding, ClusterRole and ClusterRoleBinding
// are applied for real, and two replicas (cluster.mode=kubeconfig) reach
// the API server impersonating that ServiceAccount. A validator created
// through release 1.11 on the follower is provisioned (resource, Secrets),
// the follower hands a schedule to the leader (merge patch), the leader
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

	// A kubeconfig that acts as the chart's ServiceAccount (the API server
	// adds its groups, system:serviceaccounts and system:authenticated).
	user := "system:serviceaccount:" + ns + ":vm"
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
	sa, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The identity has the Role's rights and no others; exec (the console,
	// recovery) cannot run on envtest, which has no kubelet, so its rights
	// are asked of the authorizer.
	saCore := kubernetes.NewForConfigOrDie(sa)
	for _, c := range []struct {
		attr authorizationv1.ResourceAttributes
		want bool
	}{
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"}, true},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"}, true},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Group: "metrics.k8s.io", Resource: "pods"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}, false},
	} {
		r, err := saCore.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &c.attr}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("%s may %s %s/%s in %s: %v, want %v", user, c.attr.Verb, c.attr.Resource, c.attr.Subresource, c.attr.Namespace, r.Status.Allowed, c.want)
		}
	}

	sink := &logSink{t: t}
	handler := slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelInfo})
	klog.SetLogger(logr.FromSlogHandler(handler))
	t.Cleanup(sink.close)
	// controller-runtime keeps the first logger it is given (the servers'
	// own calls come later): its controllers report refused calls here.
	ctrllog.SetLogger(logr.FromSlogHandler(handler))
	dataDir := t.TempDir()
	start := func(name string) (*app.App, string, string) {
		cfg := config.Default()
		cfg.ClusterMode = config.ClusterKubeconfig
		cfg.Kubeconfig = kubeconfig
		cfg.Namespace = ns
		cfg.DataDir = dataDir
		cfg.OutboundAllowedHosts = "*.example.com,*.test"
		cfg.ShutdownTimeout = 5 * time.Second
		cfg.LeaderElectionIdentity = name
		cfg.LeaderElectionLeaseDuration = 3 * time.Second
		cfg.LeaderElectionRenewDeadline = 2 * time.Second
		cfg.LeaderElectionRetryPeriod = 250 * time.Millisecond
		log := slog.New(handler).With("replica", name)
		// Two Managers in one process register controllers of the same names.
		skip := true
		srv, err := app.Open(ctx, cfg, log, "test", app.WithManager(func(o *manager.Options) { o.Controller.SkipNameValidation = &skip }))
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
		return srv, "http://" + ln.Addr().String(), token
	}
	replicaA, urlA, tokenA := start("replica-a")
	replicaB, urlB, tokenB := start("replica-b")

	follower, followerToken := "", ""
	apitest.Eventually(t, 30*time.Second, "one replica leads", func() error {
		switch {
		case replicaA.Role() == app.RoleLeader && replicaB.Role() == app.RoleFollower:
			follower, followerToken = urlB, tokenB
		case replicaB.Role() == app.RoleLeader && replicaA.Role() == app.RoleFollower:
			follower, followerToken = urlA, tokenA
		default:
			return fmt.Errorf("roles %s, %s", replicaA.Role(), replicaB.Role())
		}
		return nil
	})

	// Until the new leader has made the cluster's password key, a create
	// answers 503 (documented: try again shortly); nothing else but 201.
	apitest.Eventually(t, 30*time.Second, "a create through the follower", func() error {
		code, body := post(t, follower, followerToken, "/api/validators", apitest.ValidatorPayload("acme"))
		switch code {
		case http.StatusCreated:
			return nil
		case http.StatusServiceUnavailable:
			return fmt.Errorf("status %d: %s", code, body)
		}
		t.Fatalf("create through the follower: status %d: %s", code, body)
		return nil
	})
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
	if refused := sink.lines("forbidden"); len(refused) > 0 {
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

func post(t *testing.T, base, token, path string, body any) (int, string) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}
