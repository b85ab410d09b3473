package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/intent"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/management"
)

// gateway is the cluster as its consumers use it: the release 1.11
// handlers and the intent controller.
type gateway interface {
	management.Cluster
	intent.Cluster
	Ping(ctx context.Context) error
	// PutSecrets, one at a time.
	WriteSecrets(ctx context.Context, validator string, secrets domain.ValidatorSecrets) error
	DefaultSecrets(ctx context.Context, validator string, d domain.SecretDefaults) error
}

var _ gateway = (*cluster.Kube)(nil)

// Views of what a gateway wrote, read back from the cluster.
type resourceView struct {
	UID         string
	Labels      map[string]string
	Annotations map[string]string
	Spec        map[string]any // JSON-normalised: numbers are float64
	Raw         string         // the whole object as JSON
}

type secretView struct {
	Labels      map[string]string
	Annotations map[string]string
	Keys        []string
	Data        map[string]string
	Type        string
	Owners      []metav1.OwnerReference
	Version     string
}

type cronJobView struct {
	Schedule    string
	TimeZone    string
	Suspend     bool
	MaxBackups  string
	Labels      map[string]string
	Owners      []metav1.OwnerReference
	Concurrency string
	Image       string
	Command     []string
	Env         map[string]string // value, or secret:<name>/<key>
	ClaimName   string
	MountPath   string
}

func (c cronJobView) String() string {
	return fmt.Sprintf("{schedule %q timeZone %q suspend %v maxBackups %s volume %s}", c.Schedule, c.TimeZone, c.Suspend, c.MaxBackups, c.ClaimName)
}

type pvcView struct {
	StorageClass string
	Size         string
	Labels       map[string]string
	Owners       []metav1.OwnerReference
}

// env is one fresh gateway with its backend's test hooks.
type env struct {
	gw gateway
	// namespace is the gateway's (the Validators').
	namespace string
	// uniq makes a cluster-scoped name unique to this env.
	uniq func(name string) string

	addSecret          func(t *testing.T, name string, data map[string]string)
	addStorageClass    func(t *testing.T, name string)
	setDisableUserEdit func(t *testing.T, name string, on bool)
	// setPhase writes status.phase/databaseReady as the cluster's
	// controller does.
	setPhase func(t *testing.T, name string, phase domain.Phase, databaseReady bool)
	// setWorkloadNamespace writes status.namespace as the workload
	// controller does in chart mode.
	setWorkloadNamespace func(t *testing.T, name, namespace string)

	validator func(t *testing.T, name string) (resourceView, bool)
	secret    func(t *testing.T, name string) (secretView, bool)
	cronJob   func(t *testing.T, name string) (cronJobView, bool)
	pvc       func(t *testing.T, name string) (pvcView, bool)
	// everything the backend stores, as text (to look for leaked secret values)
	dump func(t *testing.T) string
}

type backend struct {
	name string
	open func(t *testing.T) *env
}

// backends: Kube over a real API server (envtest) when KUBEBUILDER_ASSETS
// is set: the gateway reads a controller-runtime cache, which client-go's
// fakes cannot back.
func backends() []backend {
	if realServer == nil {
		return nil
	}
	return []backend{{"kube (envtest)", openEnvtestEnv}}
}

func toJSONMap(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// gatewayOn builds a gateway in ns over a controller-runtime cluster of
// cfg (what the Manager gives it: cache, client, API reader); start runs
// the cache until the test ends and waits for the gateway. writes counts
// the requests that write (neither GET, LIST nor WATCH).
func gatewayOn(t testing.TB, cfg *rest.Config, ns string, opts cluster.KubeOptions) (k *cluster.Kube, start func(), writes *atomic.Int64) {
	t.Helper()
	writes = &atomic.Int64{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet {
				writes.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	scheme, err := cluster.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctrlcluster.New(cfg, func(o *ctrlcluster.Options) { o.Scheme = scheme; o.Cache = cluster.CacheOptions(ns, 0) })
	if err != nil {
		t.Fatal(err)
	}
	if k, err = cluster.NewKube(c, ns, opts); err != nil {
		t.Fatal(err)
	}
	return k, func() {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Start(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := k.Start(sctx); err != nil {
			t.Fatal(err)
		}
	}, writes
}

// clients reach the real API server in namespace ns.
type clients struct {
	core kubernetes.Interface
	dyn  dynamic.Interface
	ns   string
}

// realClients are clients of the real API server; without one the test
// skips.
func realClients(t testing.TB) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	if realServer == nil {
		t.Skip(backendFakes)
	}
	return kubernetes.NewForConfigOrDie(realServer), dynamic.NewForConfigOrDie(realServer)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// newNamespace makes a namespace of its own for a test (envtest runs no
// namespace controller, so they are never deleted, which is fine for one
// test binary).
func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	core, _ := realClients(t)
	ns := fmt.Sprintf("%s%d-%d", prefix, time.Now().UnixNano()%1e6, namespaceSeq.Add(1))
	if _, err := core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// ---- kube ----

var namespaceSeq atomic.Int64

// openEnvtestEnv: Kube over the real API server, a namespace per test.
func openEnvtestEnv(t *testing.T) *env {
	core, dyn := realClients(t)
	ns := newNamespace(t, "t")
	k, start, _ := gatewayOn(t, realServer, ns, cluster.KubeOptions{})
	start()
	return kubeEnv(t, k, core, dyn.Resource(cluster.ValidatorResource).Namespace(ns), ns)
}

// kubeEnv is the env of a started gateway over the given clients.
func kubeEnv(t *testing.T, gw gateway, core kubernetes.Interface, validators dynamic.ResourceInterface, ns string) *env {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	get := func(t *testing.T, name string) *unstructured.Unstructured {
		t.Helper()
		u, err := validators.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get validator %q: %v", name, err)
		}
		return u
	}
	uniq := func(name string) string { return ns + "-" + name }
	return &env{
		gw:        gw,
		namespace: ns,
		uniq:      uniq,
		addSecret: func(t *testing.T, name string, data map[string]string) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}}
			for k, v := range data {
				s.Data[k] = []byte(v)
			}
			if _, err := core.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		addStorageClass: func(t *testing.T, name string) {
			sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/test"}
			if _, err := core.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		setDisableUserEdit: func(t *testing.T, name string, on bool) {
			u := get(t, name)
			a := u.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			if on {
				a[domain.DisableUserEditAnnotation] = "true"
			} else {
				delete(a, domain.DisableUserEditAnnotation)
			}
			u.SetAnnotations(a)
			if _, err := validators.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		setPhase: func(t *testing.T, name string, phase domain.Phase, ready bool) {
			u := get(t, name)
			u.Object["status"] = map[string]any{"phase": string(phase), "databaseReady": ready}
			if _, err := validators.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		setWorkloadNamespace: func(t *testing.T, name, namespace string) {
			u := get(t, name)
			if err := unstructured.SetNestedField(u.Object, namespace, "status", "namespace"); err != nil {
				t.Fatal(err)
			}
			if _, err := validators.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		validator: func(t *testing.T, name string) (resourceView, bool) {
			u, err := validators.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return resourceView{}, false
			}
			if err != nil {
				t.Fatal(err)
			}
			spec, _, _ := unstructured.NestedMap(u.Object, "spec")
			raw, _ := json.Marshal(u.Object)
			return resourceView{UID: string(u.GetUID()), Labels: u.GetLabels(), Annotations: u.GetAnnotations(),
				Spec: toJSONMap(t, spec), Raw: string(raw)}, true
		},
		secret: func(t *testing.T, name string) (secretView, bool) {
			s, err := core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return secretView{}, false
			}
			if err != nil {
				t.Fatal(err)
			}
			v := secretView{Labels: s.Labels, Annotations: s.Annotations, Data: map[string]string{},
				Type: string(s.Type), Owners: s.OwnerReferences, Version: s.ResourceVersion}
			for k, d := range s.Data {
				v.Keys = append(v.Keys, k)
				v.Data[k] = string(d)
			}
			slices.Sort(v.Keys)
			return v, true
		},
		cronJob: func(t *testing.T, name string) (cronJobView, bool) {
			c, err := core.BatchV1().CronJobs(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return cronJobView{}, false
			}
			if err != nil {
				t.Fatal(err)
			}
			v := cronJobView{Schedule: c.Spec.Schedule, Labels: c.Labels, Owners: c.OwnerReferences,
				Concurrency: string(c.Spec.ConcurrencyPolicy), Env: map[string]string{}}
			if c.Spec.TimeZone != nil {
				v.TimeZone = *c.Spec.TimeZone
			}
			if c.Spec.Suspend != nil {
				v.Suspend = *c.Spec.Suspend
			}
			pod := c.Spec.JobTemplate.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("cron job containers: got %d, want 1", len(pod.Containers))
			}
			ctr := pod.Containers[0]
			v.Image, v.Command = ctr.Image, ctr.Command
			for _, e := range ctr.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					v.Env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
				} else {
					v.Env[e.Name] = e.Value
				}
			}
			v.MaxBackups = v.Env["MAX_BACKUPS"]
			for _, vol := range pod.Volumes {
				if vol.PersistentVolumeClaim != nil {
					v.ClaimName = vol.PersistentVolumeClaim.ClaimName
				}
			}
			for _, m := range ctr.VolumeMounts {
				v.MountPath = m.MountPath
			}
			return v, true
		},
		pvc: func(t *testing.T, name string) (pvcView, bool) {
			p, err := core.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return pvcView{}, false
			}
			if err != nil {
				t.Fatal(err)
			}
			v := pvcView{Labels: p.Labels, Owners: p.OwnerReferences}
			if p.Spec.StorageClassName != nil {
				v.StorageClass = *p.Spec.StorageClassName
			}
			q := p.Spec.Resources.Requests[corev1.ResourceStorage]
			v.Size = q.String()
			return v, true
		},
		dump: func(t *testing.T) string {
			var b strings.Builder
			us, err := validators.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range us.Items {
				raw, _ := json.Marshal(u.Object)
				b.Write(raw)
			}
			ss, err := core.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ss.Items { // metadata only: the data is where values belong
				raw, _ := json.Marshal(s.ObjectMeta)
				b.Write(raw)
			}
			cs, err := core.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(cs.Items)
			b.Write(raw)
			return b.String()
		},
	}
}

// eventually polls cond (a cache catches up) for up to 10 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after 10s", what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
