package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func customResource(kind, ns, name string, labels map[string]string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.Group + "/" + cluster.Version,
		"kind":       kind,
		"spec":       map[string]any{"owner": "someone else"},
	}}
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetLabels(labels)
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// within retries f until it passes or 10 s have passed (informers are asynchronous).
func within(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func listNames(raw []byte) ([]string, error) {
	var items []struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	out := []string{}
	for _, it := range items {
		if _, has := it.Metadata["managedFields"]; has {
			return nil, fmt.Errorf("%v carries managedFields", it.Metadata["name"])
		}
		out = append(out, fmt.Sprint(it.Metadata["name"]))
	}
	return out, nil
}

// TestResourceViews: release 2.0's reads see every Validator and Application
// of the namespace, whoever wrote it, and nothing of other namespaces; on a
// real API server (KUBEBUILDER_ASSETS) where the CRDs of deploy/crds are
// installed.
func TestResourceViews(t *testing.T) {
	core, dyn := realClients(t)
	c := clients{core, dyn, newNamespace(t, "v")}
	name := "envtest"
	{
		{
			ctx := context.Background()
			other := "elsewhere"
			if name == "envtest" {
				other = c.ns + "-other"
				if _, err := c.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			create := func(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
				t.Helper()
				if _, err := c.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			managed := map[string]string{cluster.ManagedByLabel: cluster.ManagedBy}
			create(cluster.ValidatorResource, customResource(cluster.Kind, c.ns, "mine", managed, nil))
			create(cluster.ValidatorResource, customResource(cluster.Kind, c.ns, "foreign", nil, nil))
			create(cluster.ValidatorResource, customResource(cluster.Kind, other, "outside", nil, nil))
			create(cluster.ApplicationGVR, customResource(cluster.ApplicationKind, c.ns, "web", nil, nil))

			k, startKube, _ := gatewayOn(t, realServer, c.ns, cluster.KubeOptions{})
			if sync := k.SyncState(); len(sync) != 0 {
				t.Fatalf("sync state before the start: got %v, want none", sync)
			}
			startKube()
			create(cluster.ValidatorResource, customResource(cluster.Kind, c.ns, "added-later", nil, nil))

			within(t, func() error {
				raw, err := k.ResourceList(domain.KindValidator)
				if err != nil {
					return err
				}
				got, err := listNames(raw)
				if want := []string{"added-later", "foreign", "mine"}; err != nil || !slices.Equal(got, want) {
					return fmt.Errorf("validators: got %v %v, want %v", got, err, want)
				}
				return nil
			})
			raw, err := k.ResourceList(domain.KindApplication)
			if got, _ := listNames(raw); err != nil || !slices.Equal(got, []string{"web"}) {
				t.Fatalf("applications: got %v %v, want [web]", got, err)
			}
			if _, err := k.ResourceObject(domain.KindValidator, "outside"); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("other namespace: got %v, want not found", err)
			}
			if st, err := k.ResourceStatus(domain.KindValidator, "foreign"); err != nil || string(st) != "{}" {
				t.Fatalf("status of a resource without one: got %s %v, want {}", st, err)
			}
			// Release 1.11 sees only its own (the summaries the cache keeps
			// of the validators labelled managed-by).
			if states, err := apitest.ValidatorStates(k); err != nil || len(states) != 1 || states["mine"] != (domain.ValidatorState{Phase: domain.PhasePending}) {
				t.Fatalf("managed view: got %v %v, want only mine", states, err)
			}
			sync := k.SyncState()
			if want := map[string]bool{"validators": true, "secrets": true, "cronjobs": true, "applications": true}; !maps.Equal(sync, want) {
				t.Fatalf("sync state: got %v, want %v", sync, want)
			}
			// An installation sees only the validators labelled with it.
			inst, startInst, _ := gatewayOn(t, realServer, c.ns, cluster.KubeOptions{Instance: "inst-b"})
			startInst()
			create(cluster.ValidatorResource, customResource(cluster.Kind, c.ns, "theirs", map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.InstallationLabel: "inst-b"}, nil))
			within(t, func() error {
				states, err := apitest.ValidatorStates(inst)
				if _, ok := states["theirs"]; err != nil || len(states) != 1 || !ok {
					return fmt.Errorf("installation inst-b: got %v %v, want only theirs", states, err)
				}
				return nil
			})

			// The lists' version (their ETag) stays while nothing changes
			// and moves with an update and a deletion.
			version := func() string {
				t.Helper()
				v, err := k.ResourceListVersion(domain.KindValidator)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			within(t, func() error { // theirs reaches k too
				if raw, _ := k.ResourceList(domain.KindValidator); !strings.Contains(string(raw), `"theirs"`) {
					return errors.New("theirs is not listed yet")
				}
				return nil
			})
			still := version()
			if again := version(); again != still {
				t.Fatalf("no change: version %s then %s", still, again)
			}
			for _, change := range []struct {
				what string
				do   func() error
			}{
				{"an update", func() error {
					u, err := c.dyn.Resource(cluster.ValidatorResource).Namespace(c.ns).Get(ctx, "mine", metav1.GetOptions{})
					if err != nil {
						return err
					}
					u.SetLabels(map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, "edited": "yes"})
					_, err = c.dyn.Resource(cluster.ValidatorResource).Namespace(c.ns).Update(ctx, u, metav1.UpdateOptions{})
					return err
				}},
				{"a deletion", func() error {
					return c.dyn.Resource(cluster.ValidatorResource).Namespace(c.ns).Delete(ctx, "foreign", metav1.DeleteOptions{})
				}},
			} {
				current := func() string { raw, _ := k.ResourceList(domain.KindValidator); return string(raw) }
				before, was := version(), current()
				if err := change.do(); err != nil {
					t.Fatal(err)
				}
				within(t, func() error {
					if current() == was {
						return fmt.Errorf("%s: the list did not change yet", change.what)
					}
					return nil
				})
				if after := version(); after == before {
					t.Fatalf("%s: the list changed, its version stayed %s", change.what, before)
				}
			}
		}
	}
}

// TestApplicationsNotServed: without the Application CRD the gateway runs;
// application reads say what is missing.
func TestApplicationsNotServed(t *testing.T) {
	if realServer == nil {
		t.Skip(backendFakes)
	}
	cfg := notServing(cluster.ApplicationResource)
	k, start, _ := gatewayOn(t, cfg, newNamespace(t, "n"), cluster.KubeOptions{})
	start()
	if _, err := k.ResourceList(domain.KindValidator); err != nil {
		t.Fatalf("validators: %v", err)
	}
	_, err := k.ResourceList(domain.KindApplication)
	if !errors.Is(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "deploy/crds") {
		t.Fatalf("applications: got %v, want unavailable naming deploy/crds", err)
	}
	if _, err := k.ApplicationMetrics(context.Background()); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("metrics: got %v, want unavailable", err)
	}
}

// notServing is the real API server's configuration, with the API server
// answering 404 for resource, as one without its CRD.
func notServing(resource string) *rest.Config {
	cfg := rest.CopyConfig(realServer)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/"+resource) {
				return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{"Content-Type": []string{"application/json"}}, Request: r,
					Body: io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))}, nil
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

// TestValidatorsNotServed: without the Validator CRD the gateway does not
// start, and says what to apply.
func TestValidatorsNotServed(t *testing.T) {
	if realServer == nil {
		t.Skip(backendFakes)
	}
	k, _, _ := gatewayOn(t, notServing(cluster.Resource), newNamespace(t, "n"), cluster.KubeOptions{})
	err := k.Start(context.Background())
	if !errors.Is(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "deploy/crds") {
		t.Fatalf("Start: got %v, want unavailable naming deploy/crds", err)
	}
}

// TestApplicationMetricsUnavailable: a metrics API that fails (or none)
// makes metricsAvailable false with usage null; requests and limits stay.
func TestApplicationMetricsUnavailable(t *testing.T) {
	core, dyn := realClients(t)
	ns := "validators"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns, Labels: map[string]string{cluster.InstanceLabel: "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example.test/web:1", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Mi")},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	failing := metricsfake.NewSimpleClientset()
	failing.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server is currently unable to handle the request (get pods.metrics.k8s.io)")
	})
	working := metricsfake.NewSimpleClientset()
	working.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &metricsv1beta1.PodMetricsList{Items: []metricsv1beta1.PodMetrics{{
			// metrics-server copies the pod's labels.
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns, Labels: map[string]string{cluster.InstanceLabel: "web"}},
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("42m"), corev1.ResourceMemory: resource.MustParse("3Mi"),
			}}},
		}}}, nil
	})
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		opts cluster.KubeOptions
		want domain.ApplicationMetrics
	}{
		{"failing", cluster.KubeOptions{Metrics: failing.MetricsV1beta1()}, domain.ApplicationMetrics{Name: "web", Namespace: ns, CPURequest: i64(100), MemoryRequest: i64(1 << 20)}},
		{"none", cluster.KubeOptions{}, domain.ApplicationMetrics{Name: "web", Namespace: ns, CPURequest: i64(100), MemoryRequest: i64(1 << 20)}},
		{"working", cluster.KubeOptions{Metrics: working.MetricsV1beta1()}, domain.ApplicationMetrics{Name: "web", Namespace: ns, Available: true,
			CPURequest: i64(100), MemoryRequest: i64(1 << 20), CPUUsage: i64(42), MemoryUsage: i64(3 << 20)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, "m")
			p := pod.DeepCopy()
			p.Namespace = ns
			created, err := core.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			created.Status = pod.Status
			if _, err := core.CoreV1().Pods(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			app := customResource(cluster.ApplicationKind, ns, "web", nil, nil)
			if _, err := dyn.Resource(cluster.ApplicationGVR).Namespace(ns).Create(context.Background(), app, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			k, start, _ := gatewayOn(t, realServer, ns, tc.opts)
			start()
			tc.want.Namespace = ns
			within(t, func() error { _, err := k.ResourceObject(domain.KindApplication, "web"); return err })
			got, err := k.ApplicationMetrics(context.Background(), "web")
			if err != nil || len(got) != 1 {
				t.Fatalf("got %v %v", got, err)
			}
			if g, w := toJSONMap(t, got[0]), toJSONMap(t, tc.want); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("got %v, want %v", g, w)
			}
			if _, err := k.ApplicationMetrics(context.Background(), "absent"); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("absent application: got %v, want not found", err)
			}
		})
	}
}
