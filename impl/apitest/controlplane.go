package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/engine"
)

// plane is the test process's control plane: etcd, kube-apiserver and
// kube-controller-manager of impl/embedded/engine (the embedded default's), started
// on first use and shared by every server the process starts, each in a
// namespace of its own with a simulated node of its own.
var plane struct {
	once sync.Once
	dir  string
	eng  *engine.Engine
	err  error
}

// ControlPlane is the process's shared control plane, started on first use
// (binaries from `make engine` or KUBEBUILDER_ASSETS).
func ControlPlane(t testing.TB) *rest.Config {
	t.Helper()
	plane.once.Do(func() {
		if plane.dir, plane.err = os.MkdirTemp("", "vm-controlplane-"); plane.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		plane.eng, plane.err = engine.Start(ctx, engine.Options{Dir: plane.dir, Kubeconfig: filepath.Join(plane.dir, "kubeconfig"),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	})
	if plane.err != nil {
		t.Fatalf("control plane: %v", plane.err)
	}
	return plane.eng.RESTConfig()
}

// ControlPlaneKubeconfig is the kubeconfig file of the shared control plane,
// for a server process a test starts.
func ControlPlaneKubeconfig(t testing.TB) string {
	t.Helper()
	ControlPlane(t)
	return filepath.Join(plane.dir, "kubeconfig")
}

// Main runs a package's tests, then stops the control plane they shared
// and removes its directory. (Its children die with the process anyway.)
func Main(m *testing.M) {
	code := m.Run()
	if plane.eng != nil {
		plane.eng.Stop()
	}
	if plane.dir != "" {
		os.RemoveAll(plane.dir)
	}
	os.Exit(code)
}

// Namespace names a new namespace for one server.
func Namespace() string {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "t-" + hex.EncodeToString(b)
}

// Kube is what a test reaches the control plane with, as kubectl would, in
// one namespace.
type Kube struct {
	Core      kubernetes.Interface
	Dyn       dynamic.Interface
	Namespace string
	// gateway is the server's, whose views and records Settle waits for.
	// A Validator's view follows the one informer of Validators the
	// Manager's cache reads too: once the view shows a change, so does
	// the cache.
	gateway *cluster.Kube
}

// newKube reaches rc in namespace; gateway is the server's cluster
// gateway, which Settle and SetStatus wait for.
func newKube(t testing.TB, rc *rest.Config, namespace string, gateway *cluster.Kube) *Kube {
	t.Helper()
	core, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &Kube{Core: core, Dyn: dyn, Namespace: namespace, gateway: gateway}
}

// Validators is the dynamic client of the namespace's Validator resources.
func (k *Kube) Validators() dynamic.ResourceInterface {
	return k.Dyn.Resource(cluster.ValidatorResource).Namespace(k.Namespace)
}

// Applications is the dynamic client of the namespace's Applications.
func (k *Kube) Applications() dynamic.ResourceInterface {
	return k.Dyn.Resource(cluster.ApplicationGVR).Namespace(k.Namespace)
}

// SetStatus writes a validator's status through the status subresource,
// as the workload controller does from the workloads, and waits until the
// gateway's caches hold it.
func (k *Kube) SetStatus(ctx context.Context, name string, phase domain.Phase, databaseReady bool) error {
	return k.updateValidator(ctx, "status of validator", name, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if err := unstructured.SetNestedField(u.Object, string(phase), "status", "phase"); err != nil {
			return nil, err
		}
		if err := unstructured.SetNestedField(u.Object, databaseReady, "status", "databaseReady"); err != nil {
			return nil, err
		}
		return k.Validators().UpdateStatus(ctx, u, metav1.UpdateOptions{})
	})
}

// updateValidator reads validator name and writes it with update, again
// on a conflict, then waits until the gateway's caches hold what it
// wrote; what names the change in errors.
func (k *Kube) updateValidator(ctx context.Context, what, name string, update func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) error {
	var stored *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := k.Validators().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		stored, err = update(u)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, name, err)
	}
	return k.seen(ctx, domain.KindValidator, stored)
}

// Settle waits until the gateway's views and the Manager's cache hold
// every Validator, Application and managed CronJob the namespace has now
// (not deletions: a test that deletes waits for what it expects to see).
func (k *Kube) Settle(ctx context.Context) error {
	for kind, api := range map[domain.ResourceKind]dynamic.ResourceInterface{domain.KindValidator: k.Validators(), domain.KindApplication: k.Applications()} {
		l, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range l.Items {
			o := &l.Items[i]
			if err := k.seen(ctx, kind, o); err != nil {
				// Deleted since the list (a controller removed it): there
				// is nothing left for the caches to hold.
				if cur, gerr := api.Get(ctx, o.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(gerr) || gerr == nil && cur.GetUID() != o.GetUID() {
					continue
				}
				return err
			}
		}
	}
	cronJobs, err := k.Core.BatchV1().CronJobs(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: cluster.ManagedByLabel + "=" + cluster.ManagedBy})
	if err != nil {
		return err
	}
	for i := range cronJobs.Items {
		if err := k.seen(ctx, "", &cronJobs.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

// seen waits, 10 s at most, until the gateway holds o at its
// resourceVersion or a later one: in its view of kind, or in its records
// of CronJobs when kind is "".
func (k *Kube) seen(ctx context.Context, kind domain.ResourceKind, o metav1.Object) error {
	if k.gateway == nil {
		return nil
	}
	want, err := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	if err != nil {
		return fmt.Errorf("resourceVersion %q: %w", o.GetResourceVersion(), err)
	}
	held := func() string {
		if kind == "" {
			return k.gateway.CachedCronJobVersion(o.GetName())
		}
		var m struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if raw, err := k.gateway.ResourceObject(kind, o.GetName()); err != nil || json.Unmarshal(raw, &m) != nil {
			return ""
		}
		return m.Metadata.ResourceVersion
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if n, err := strconv.ParseInt(held(), 10, 64); err == nil && n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server's cache does not hold %s %s at version %d after 10 s", kind, o.GetName(), want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// AddSecret creates or replaces a Secret, as an operator does with kubectl.
func (k *Kube) AddSecret(ctx context.Context, name string, data map[string]string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace}, Type: corev1.SecretTypeOpaque, StringData: data}
	api := k.Core.CoreV1().Secrets(k.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, s, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		s.ResourceVersion, s.Data = cur.ResourceVersion, nil
		_, err = api.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
}

// SetDisableUserEdit sets or removes the validator's disable-user-edit
// annotation, as an operator does with kubectl, and waits until the
// gateway's caches hold it.
func (k *Kube) SetDisableUserEdit(ctx context.Context, name string, on bool) error {
	return k.updateValidator(ctx, "annotate validator", name, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
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
		return k.Validators().Update(ctx, u, metav1.UpdateOptions{})
	})
}

// remove deletes the namespace and its node (the namespace controller
// deletes what it holds).
func (k *Kube) remove(node string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = k.Core.CoreV1().Namespaces().Delete(ctx, k.Namespace, metav1.DeleteOptions{})
	_ = k.Core.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
}

// Eventually retries f every 20 ms until it succeeds, failing the test with
// f's last error after within: what a real API server's controllers do
// happens soon, not at once.
func Eventually(t testing.TB, within time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ValidatorStates reads every managed validator's state from the cluster
// gateway's cache (a resource deleted between the two reads is left out).
func ValidatorStates(k interface {
	ManagedValidators() ([]string, error)
	CachedState(name string) (domain.ValidatorState, bool)
}) (map[string]domain.ValidatorState, error) {
	names, err := k.ManagedValidators()
	if err != nil {
		return nil, err
	}
	out := make(map[string]domain.ValidatorState, len(names))
	for _, name := range names {
		if st, ok := k.CachedState(name); ok {
			out[name] = st
		}
	}
	return out, nil
}
