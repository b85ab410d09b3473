package workload_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/controller/workload/workloadtest"
)

// apart is the label of Validators the test binary's shared controller
// does not see (TestMain): a test starts and stops its own, as a server
// restarts.
const apart = "workload.validator-manager.io/test-apart"

// process is one run of the controller, as one server process runs it,
// over namespace ns: writes counts every request to the API server that is
// not a read (watches and lists are reads), seen every Validator its cache
// gave the controller (each queues a reconcile).
type process struct {
	writes  atomic.Int64
	seen    atomic.Int64
	mu      sync.Mutex
	written []string
	stop    func()
}

func (p *process) wrote() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.written...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingCache counts the Validators its informer gives its handlers,
// once each handler has them.
type countingCache struct {
	cache.Cache
	seen *atomic.Int64
}

func (c countingCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if _, ok := obj.(*v1alpha1.Validator); err != nil || !ok {
		return inf, err
	}
	return countingInformer{Informer: inf, seen: c.seen}, nil
}

type countingInformer struct {
	cache.Informer
	seen *atomic.Int64
}

func (i countingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(countingHandler{ResourceEventHandler: h, seen: i.seen})
}

type countingHandler struct {
	toolscache.ResourceEventHandler
	seen *atomic.Int64
}

func (h countingHandler) OnAdd(obj any, initial bool) {
	h.ResourceEventHandler.OnAdd(obj, initial)
	h.seen.Add(1)
}

func (h countingHandler) OnUpdate(old, cur any) {
	h.ResourceEventHandler.OnUpdate(old, cur)
	h.seen.Add(1)
}

// startProcess starts the controller in a Manager of its own, caching ns
// only, as a server would after a restart; it stops with the test. With
// charts, in chart mode, caching too the labelled objects of every other
// namespace (cluster.ReleaseCache), as the server does.
func startProcess(t *testing.T, ns string, charts ...*workloadtest.Charts) *process {
	t.Helper()
	p := &process{}
	cfg := rest.CopyConfig(restConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet {
				p.writes.Add(1)
				p.mu.Lock()
				p.written = append(p.written, r.Method+" "+r.URL.Path)
				p.mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	scheme, err := cluster.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	opts, o := cluster.CacheOptions(ns, 0), workload.Options{MaxConcurrentReconciles: 2}
	if len(charts) > 0 {
		if err := cluster.ReleaseCache(&opts, ns); err != nil {
			t.Fatal(err)
		}
		o.Renderer, o.RenderBackoff, o.MaxRenderBackoff = charts[0], 100*time.Millisecond, time.Second
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Cache:      opts,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewCache: func(c *rest.Config, o cache.Options) (cache.Cache, error) {
			ca, err := cache.New(c, o)
			return countingCache{Cache: ca, seen: &p.seen}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := workload.New(o).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(p.stop)
	return p
}

// quiet waits until p has been given a validator and then written nothing
// for a second, and returns what it wrote in all.
func (p *process) quiet(t *testing.T) int64 {
	t.Helper()
	last, since := p.writes.Load(), time.Now()
	eventually(t, "the controller idle", func(context.Context) error {
		if n := p.writes.Load(); n != last {
			last, since = n, time.Now()
		}
		if p.seen.Load() == 0 || time.Since(since) < time.Second {
			return fmt.Errorf("%d validators seen, %d writes, the last %s ago", p.seen.Load(), last, time.Since(since))
		}
		return nil
	})
	return last
}

// A restart over a validator whose workloads and status are what the
// controller would make writes nothing: each object is compared with the
// cache before it is applied, and the status too. Objects changed by hand
// while no controller ran are corrected at the next start, and only they
// are written.
func TestRestartWritesNothing(t *testing.T) {
	v := create(t, func(v *v1alpha1.Validator) { v.Labels = map[string]string{apart: "true"} })
	first := startProcess(t, v.Namespace)
	eventually(t, "workloads and status", func(ctx context.Context) error {
		var st appsv1.StatefulSet
		if err := apiServer.Get(ctx, key(v, workload.Postgres), &st); err != nil {
			return err
		}
		var cur v1alpha1.Validator
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		if cur.Status.Phase == "" {
			return fmt.Errorf("no status yet")
		}
		return nil
	})
	if n := first.quiet(t); n == 0 {
		t.Fatal("the first process wrote nothing")
	}
	// Once each: an object the last apply made is not applied again.
	applies := 0
	for _, w := range first.wrote() {
		if strings.HasPrefix(w, http.MethodPatch) && !strings.HasSuffix(w, "/status") {
			applies++
		}
	}
	if want := len(workload.Desired(v)) - 1; applies != want { // the claim is created
		t.Errorf("the first process applied %d times (%v), want %d: once each", applies, first.wrote(), want)
	}
	first.stop()

	second := startProcess(t, v.Namespace)
	second.quiet(t)
	if n := second.writes.Load(); n != 0 {
		t.Fatalf("a restart with nothing changed wrote %d times (%v), want 0", n, second.wrote())
	}
	second.stop()

	// Changed by hand while no controller runs: a field of the pod
	// template (an Update takes it over), a label removed, a Service
	// port's target.
	ctx := context.Background()
	d, err := getDeployment(ctx, v, workload.ValidatorApp)
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "example.test/other:1"
	delete(d.Labels, workload.MigrationLabel)
	if err := apiServer.Update(ctx, d, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	var svc corev1.Service
	if err := apiServer.Get(ctx, key(v, workload.Participant), &svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Ports[0].TargetPort = intstr.FromInt32(1234)
	if err := apiServer.Update(ctx, &svc, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	third := startProcess(t, v.Namespace)
	eventually(t, "hand edits corrected", func(ctx context.Context) error {
		d, err := getDeployment(ctx, v, workload.ValidatorApp)
		if err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/example/docker/validator-app:0.5.1" || d.Labels[workload.MigrationLabel] == "" {
			return fmt.Errorf("image %s labels %v", img, d.Labels)
		}
		var s corev1.Service
		if err := apiServer.Get(ctx, key(v, workload.Participant), &s); err != nil {
			return err
		}
		if s.Spec.Ports[0].TargetPort.IntVal == 1234 {
			return fmt.Errorf("service ports %+v", s.Spec.Ports)
		}
		return nil
	})
	third.quiet(t)
	if got := third.wrote(); len(got) != 2 {
		t.Errorf("after two objects changed by hand: wrote %v, want those two applied", got)
	}
}

// A status the controller would write is not written again at a restart,
// and one changed by hand is written back.
func TestRestartRewritesStatusChangedByHand(t *testing.T) {
	v := create(t, func(v *v1alpha1.Validator) { v.Labels = map[string]string{apart: "true"} })
	first := startProcess(t, v.Namespace)
	var cur v1alpha1.Validator
	eventually(t, "status", func(ctx context.Context) error {
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		if cur.Status.Phase == "" {
			return fmt.Errorf("no status yet")
		}
		return nil
	})
	first.quiet(t)
	first.stop()
	want := cur.Status.Phase
	ctx := context.Background()
	if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.Phase = v1alpha1.PhaseCompleted
	cur.Status.Conditions = nil
	if err := apiServer.Status().Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	second := startProcess(t, v.Namespace)
	eventually(t, "status written back", func(ctx context.Context) error {
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		if cur.Status.Phase != want || len(cur.Status.Conditions) == 0 {
			return fmt.Errorf("status %+v", cur.Status)
		}
		return nil
	})
	second.quiet(t)
	if got := second.wrote(); len(got) != 1 {
		t.Errorf("wrote %v, want the status once", got)
	}
}
