package nodesim_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/validator-manager/validator-manager/impl/embedded/engine"
	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
)

// One engine and one simulator serve every test of the package; each test
// works in a namespace of its own.
var (
	skipReason string
	core       kubernetes.Interface
	dyn        dynamic.Interface
	sim        *nodesim.Simulator
	nsCounter  atomic.Int32
	plane      *rest.Config
)

// restConfig is a copy of the administrator's configuration of the engine.
func restConfig() *rest.Config { return rest.CopyConfig(plane) }

const readyDelay = 300 * time.Millisecond

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bin := engine.DefaultBinDir()
	for _, b := range []string{engine.Etcd, engine.APIServer, engine.ControllerManager} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			skipReason = fmt.Sprintf("engine binaries absent (%s missing in %s): run `make engine` or set KUBEBUILDER_ASSETS", b, bin)
			return m.Run()
		}
	}
	dir, err := os.MkdirTemp("", "nodesim-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := engine.Start(ctx, engine.Options{Dir: filepath.Join(dir, "cluster"), Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Stop()
	plane = e.RESTConfig()
	core = kubernetes.NewForConfigOrDie(e.RESTConfig())
	dyn = dynamic.NewForConfigOrDie(e.RESTConfig())
	if sim, err = nodesim.New(e.RESTConfig(), nodesim.Options{ReadyDelay: readyDelay, Logger: log}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- sim.Start(ctx) }()
	select {
	case <-sim.Ready():
	case err := <-done:
		fmt.Fprintln(os.Stderr, "nodesim:", err)
		return 1
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "nodesim not ready within 30s")
		return 1
	}
	code := m.Run()
	cancel()
	<-done
	return code
}

// namespace makes a namespace for one test, with its default service
// account (which Pod admission requires) in place.
func namespace(t *testing.T) string {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	t.Parallel()
	name := fmt.Sprintf("t%d-%s", nsCounter.Add(1), strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	return newNamespace(t, strings.TrimRight(name, "-"))
}

// newNamespace makes the namespace name, with its default service account.
func newNamespace(t testing.TB, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "default service account", func() (bool, string) {
		_, err := core.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return name
}

func eventually(t testing.TB, d time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		done, state := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last: %s)", what, d, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "busybox:1.36",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
	}}}
}

func labels(app string) map[string]string { return map[string]string{"app": app} }

func TestDeploymentBecomesAvailable(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels("web")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("web")}, Spec: podSpec()},
		},
	}
	if _, err := core.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "deployment available", func() (bool, string) {
		d, err := core.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue && d.Status.ReadyReplicas == 2 && d.Status.AvailableReplicas == 2 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", d.Status)
	})
	pods, err := core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("pods: %d, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != sim.NodeName() || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" ||
			len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
			t.Errorf("pod %s: node %q phase %s ip %q statuses %+v, want bound to %s, running and ready", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, p.Status.ContainerStatuses, sim.NodeName())
		}
	}
	// The simulated usage covers the running Pods.
	pm, err := sim.Metrics().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pm.Items) != 2 {
		t.Fatalf("pod metrics: %d, want 2", len(pm.Items))
	}
	for _, m := range pm.Items {
		cpu := m.Containers[0].Usage.Cpu().MilliValue()
		if cpu < 20 || cpu > 70 {
			t.Errorf("pod %s: cpu %dm, want 20–70%% of the 100m request", m.Name, cpu)
		}
	}
}

func TestStatefulSetWithClaimBecomesReady(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	spec := podSpec()
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: labels("db")},
			Template:    corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("db")}, Spec: spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	if _, err := core.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "statefulset ready", func() (bool, string) {
		s, err := core.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.ReadyReplicas == 1 && s.Status.AvailableReplicas == 1, fmt.Sprintf("%+v", s.Status)
	})
	pvc, err := core.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" || ptr.Deref(pvc.Spec.StorageClassName, "") != "standard" {
		t.Errorf("claim: phase %s volume %q class %v, want Bound to a volume of class standard", pvc.Status.Phase, pvc.Spec.VolumeName, pvc.Spec.StorageClassName)
	}
	// A claim deleted with its StatefulSet's scale-down releases its volume,
	// which the simulator then deletes.
	if err := core.AppsV1().StatefulSets(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pod db-0 collected", func() (bool, string) {
		_, err := core.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if err := core.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data-db-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "volume deleted", func() (bool, string) {
		_, err := core.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func jobSpec() batchv1.JobSpec {
	spec := podSpec()
	spec.RestartPolicy = corev1.RestartPolicyNever
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}, BackoffLimit: ptr.To[int32](0)}
}

func jobComplete(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestJobCompletes(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: ns}, Spec: jobSpec()}
	if _, err := core.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "job complete", func() (bool, string) {
		j, err := core.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return jobComplete(j) && j.Status.Succeeded == 1, fmt.Sprintf("%+v", j.Status)
	})
}

// TestCronJobRecordsSuccess waits for the next minute: the CronJob
// controller starts Jobs on minute boundaries.
func TestCronJobRecordsSuccess(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Namespace: ns},
		Spec: batchv1.CronJobSpec{
			Schedule:    "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec()},
		},
	}
	if _, err := core.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "cronjob records a successful run", func() (bool, string) {
		cj, err := core.BatchV1().CronJobs(ns).Get(ctx, "every-minute", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cj.Status.LastSuccessfulTime != nil, fmt.Sprintf("%+v", cj.Status)
	})
	jobs, err := core.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) == 0 || !jobComplete(&jobs.Items[0]) {
		t.Fatalf("jobs: %+v, want a complete one", jobs.Items)
	}
}

func TestDeletingOwnerCollectsOwned(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels("gone")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("gone")}, Spec: podSpec()},
		},
	}
	if _, err := core.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pods ready", func() (bool, string) {
		d, err := core.AppsV1().Deployments(ns).Get(ctx, "gone", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 2, fmt.Sprint(err)
	})
	if err := core.AppsV1().Deployments(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "replica sets and pods collected", func() (bool, string) {
		rs, err := core.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(rs.Items) == 0 && len(pods.Items) == 0, fmt.Sprintf("%d replica sets, %d pods", len(rs.Items), len(pods.Items))
	})
}

func TestApplicationRunsAsDeployment(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	if err := nodesim.CreateSampleApplication(ctx, dyn, ns); err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(nodesim.ApplicationGVR).Namespace(ns)
	eventually(t, 30*time.Second, "application running", func() (bool, string) {
		a, err := apps.Get(ctx, nodesim.SampleApplication, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(a.Object, "status", "phase")
		replicas, _, _ := unstructured.NestedInt64(a.Object, "status", "replicas")
		return phase == "Running" && replicas == 2, fmt.Sprint(a.Object["status"])
	})
	sel := nodesim.InstanceLabel + "=" + nodesim.SampleApplication
	pm, err := sim.Metrics().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(pm.Items) != 2 {
		t.Fatalf("pod metrics of %s: %d, want 2", sel, len(pm.Items))
	}
	// Get answers for a running Pod, not found for another name.
	if _, err := sim.Metrics().PodMetricses(ns).Get(ctx, pm.Items[0].Name, metav1.GetOptions{}); err != nil {
		t.Errorf("get metrics of %s: %v", pm.Items[0].Name, err)
	}
	if _, err := sim.Metrics().PodMetricses(ns).Get(ctx, "absent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get metrics of an absent pod: %v, want not found", err)
	}
	// The same over HTTP, as a server in another process reads them: the
	// metrics clientset on the paths and wire format of metrics.k8s.io.
	srv := httptest.NewServer(sim.Metrics().Handler())
	defer srv.Close()
	remote := metricsclient.NewForConfigOrDie(&rest.Config{Host: srv.URL}).MetricsV1beta1()
	rl, err := remote.PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(rl.Items) != 2 || rl.Items[0].Containers[0].Usage.Cpu().IsZero() {
		t.Fatalf("pod metrics over HTTP: %v %+v, want the two pods' usage", err, rl)
	}
	if _, err := remote.PodMetricses(ns).Get(ctx, pm.Items[0].Name, metav1.GetOptions{}); err != nil {
		t.Errorf("get metrics over HTTP: %v", err)
	}
	if _, err := remote.PodMetricses(ns).Get(ctx, "absent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get metrics of an absent pod over HTTP: %v, want not found", err)
	}
	if all, err := remote.PodMetricses("").List(ctx, metav1.ListOptions{LabelSelector: sel}); err != nil || len(all.Items) < 2 {
		t.Errorf("pod metrics of every namespace over HTTP: %v %+v", err, all)
	}
	// Scaling the Application scales its Pods.
	if _, err := apps.Patch(ctx, nodesim.SampleApplication, "application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "one pod left", func() (bool, string) {
		pods, err := core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err == nil && len(pods.Items) == 1, fmt.Sprint(err)
	})
	// Deleting it removes its Deployment and Pods. kube-controller-manager's
	// garbage collector watches a custom resource's kind only from its next
	// resource sync (every 30 s) after the CRD is made, which this test
	// may beat: it then collects at that sync; under load (make test beside
	// another) that once took more than 30 s.
	if err := apps.Delete(ctx, nodesim.SampleApplication, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "deployment and pods collected", func() (bool, string) {
		_, err := core.AppsV1().Deployments(ns).Get(ctx, nodesim.SampleApplication, metav1.GetOptions{})
		pods, perr := core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return apierrors.IsNotFound(err) && perr == nil && len(pods.Items) == 0, fmt.Sprint(err)
	})
}

// TestRestartWritesNothing: a simulator started again over the node and
// storage class a first one made (a restart of the server) rewrites
// neither, as a kubelet restarted over an unchanged node would not. Not
// parallel: the second simulator runs before any parallel test's Pods exist.
func TestRestartWritesNothing(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	ctx := context.Background()
	versions := func() (node, class string) {
		t.Helper()
		n, err := core.CoreV1().Nodes().Get(ctx, "embedded-node", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := core.StorageV1().StorageClasses().Get(ctx, "standard", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.ResourceVersion, sc.ResourceVersion
	}
	node0, class0 := versions()
	// An update or create that changes nothing leaves resource versions
	// alone: the second simulator's write requests are counted too.
	var writes []string
	var mu sync.Mutex
	cfg := restConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				mu.Lock()
				writes = append(writes, req.Method+" "+req.URL.Path)
				mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	startSim(t, cfg, nodesim.Options{ReadyDelay: readyDelay, Logger: slog.New(slog.DiscardHandler)})()
	if node1, class1 := versions(); node1 != node0 || class1 != class0 {
		t.Errorf("node and storage class resource versions %s, %s after a restart; want %s, %s (unchanged)", node1, class1, node0, class0)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range writes {
		if strings.Contains(w, "/nodes") || strings.Contains(w, "/storageclasses") {
			t.Errorf("a restart over the registered node wrote %s", w)
		}
	}
}

// startSim starts a simulator of its own over rc and waits until it is
// ready; stop ends it.
func startSim(t *testing.T, rc *rest.Config, o nodesim.Options) (stop func()) {
	t.Helper()
	sim, err := nodesim.New(rc, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Start(ctx) }()
	select {
	case <-sim.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("simulator: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("simulator not ready within 30 s")
	}
	return func() {
		cancel()
		<-done
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestMissedPodIsSimulatedAfterAResync: a Pod whose binding the API server
// refused with a conflict while a fault lasted (the simulator takes a
// conflict for a change whose own event follows, and drops the Pod) is
// bound and runs once the fault has cleared, within the cache's resync
// and no later than a minute, although nothing about it changes. The
// resync is shortened from Resync so that the test waits seconds.
func TestMissedPodIsSimulatedAfterAResync(t *testing.T) {
	const resync = 3 * time.Second
	ns := namespace(t)
	ctx := context.Background()
	const scheduler, node = "resync-scheduler", "resync-node"
	var faulty atomic.Bool
	var refused atomic.Int32
	faulty.Store(true)
	cfg := restConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if faulty.Load() && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/binding") {
				refused.Add(1)
				body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"refused by the test's fault"}`
				return &http.Response{StatusCode: http.StatusConflict, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
			}
			return rt.RoundTrip(req)
		})
	}
	// A simulator of the namespace's own scheduler (the package's binds
	// only the default scheduler's Pods), on a node of its own.
	t.Cleanup(startSim(t, cfg, nodesim.Options{Namespace: ns, NodeName: node, SchedulerName: scheduler, ReadyDelay: readyDelay,
		Resync: resync, Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(func() { _ = core.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}) })
	spec := podSpec()
	spec.SchedulerName = scheduler
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "missed", Namespace: ns}, Spec: spec}
	if _, err := core.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a binding refused", func() (bool, string) { return refused.Load() > 0, "none yet" })
	faulty.Store(false)
	cleared := time.Now()
	eventually(t, time.Minute, "the Pod running after the fault cleared", func() (bool, string) {
		p, err := core.CoreV1().Pods(ns).Get(ctx, "missed", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning, fmt.Sprintf("node %q, phase %s", p.Spec.NodeName, p.Status.Phase)
	})
	t.Logf("running %s after the fault cleared (resync %s)", time.Since(cleared).Round(time.Second), resync)
}
