// Package simcluster is a simulated Kubernetes cluster for tests: the
// cluster gateway over client-go's fake clientsets, persisted in SQLite, with
// a simulated kubelet. Only test binaries link it.
package simcluster

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/validator-manager/validator-manager/impl/cluster"
	batchv1 "k8s.io/api/batch/v1"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// File is the embedded cluster's object store inside its directory:
// a SQLite database, one row per object, Secret data included (as etcd
// holds it), readable by its owner only.
const File = "objects.db"

// legacyStateFile is where release 1.11's simulated cluster kept its state.
const legacyStateFile = "state.json"

// DefaultStorageClass is the storage class a new embedded cluster has.
const DefaultStorageClass = "standard"

// Options tune the embedded cluster; zero values take the defaults.
type Options struct {
	// Namespace the gateway works in; default "default".
	Namespace string
	// Kubelet moves the validators' status; its Now is also the clock that
	// stamps creationTimestamp.
	Kubelet KubeletOptions
	Kube    cluster.KubeOptions
	// Logger reports failed kubelet steps; default slog.Default().
	Logger *slog.Logger
}

// Cluster is a simulated cluster for tests: the client-go gateway
// (cluster.Kube) over client-go's fake clientsets, whose objects live in
// <dir>/objects.db, plus a simulated kubelet that moves status with a
// validator's age. Start it like cluster.Kube, then Run it. It is linked
// into test binaries only; the server runs on a real API server.
type Cluster struct {
	*cluster.Kube
	core      *kubefake.Clientset
	dyn       *dynamicfake.FakeDynamicClient
	tracker   *tracker
	db        *sql.DB // writes
	reads     *sql.DB
	kubelet   *Kubelet
	namespace string
	fresh     bool // the object store was created by this open
	closeOnce sync.Once
}

// embeddedScheme knows the built-in kinds and the Validator as unstructured.
func embeddedScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // the built-in kinds always register
	}
	gv := schema.GroupVersion{Group: cluster.Group, Version: cluster.Version}
	s.AddKnownTypeWithName(gv.WithKind(cluster.Kind), &unstructured.Unstructured{})
	s.AddKnownTypeWithName(gv.WithKind(cluster.Kind+"List"), &unstructured.UnstructuredList{})
	s.AddKnownTypeWithName(gv.WithKind(cluster.ApplicationKind), &unstructured.Unstructured{})
	s.AddKnownTypeWithName(gv.WithKind(cluster.ApplicationKind+"List"), &unstructured.UnstructuredList{})
	return s
}

// Open opens (creating) the embedded cluster in dir. A new cluster
// has the storage class "standard".
func Open(dir string, opts Options) (*Cluster, error) {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := opts.Kubelet.defaults(); err != nil {
		return nil, err
	}
	db, reads, err := openObjectStore(dir)
	if err != nil {
		return nil, fmt.Errorf("embedded cluster: %w", err)
	}
	e, err := newEmbedded(db, reads, opts)
	if err != nil {
		db.Close()
		reads.Close()
		return nil, fmt.Errorf("embedded cluster: %s: %w", filepath.Join(dir, File), err)
	}
	if _, err := os.Stat(filepath.Join(dir, legacyStateFile)); err == nil && e.fresh {
		opts.Logger.Warn("embedded cluster: "+legacyStateFile+" of release 1.11's simulated cluster is not read; its validators' objects are not in the new cluster (it held no Secret values)",
			"dir", dir)
	}
	return e, nil
}

// openObjectStore opens <dir>/objects.db: directory 0700, file 0600 (SQLite
// gives its journal files the database file's mode). Each commit is synced
// to disk, as etcd syncs its log. db writes (one connection); reads reads
// (a pool: with the write-ahead log, reads and snapshots run beside writes).
func openObjectStore(dir string) (db, reads *sql.DB, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, File)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, nil, err
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_busy_timeout", "5000")
	if db, err = sql.Open("sqlite3", "file:"+path+"?"+q.Encode()); err != nil {
		return nil, nil, err
	}
	// One writer at a time, in the tracker's order.
	db.SetMaxOpenConns(1)
	r := url.Values{}
	r.Set("_busy_timeout", "5000")
	r.Set("_query_only", "true")
	if reads, err = sql.Open("sqlite3", "file:"+path+"?"+r.Encode()); err != nil {
		db.Close()
		return nil, nil, err
	}
	reads.SetMaxIdleConns(4)
	return db, reads, nil
}

func newEmbedded(db, reads *sql.DB, opts Options) (*Cluster, error) {
	t := newTracker(embeddedScheme(), opts.Kubelet.Now)
	fresh, err := t.load(db, reads)
	if err != nil {
		return nil, err
	}
	if fresh {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: DefaultStorageClass}, Provisioner: "validator-manager.io/embedded"}
		if err := t.Create(storagev1.SchemeGroupVersion.WithResource("storageclasses"), sc, ""); err != nil {
			return nil, err
		}
		if err := t.Create(cluster.ApplicationGVR, sampleApplication(opts.Namespace), opts.Namespace); err != nil {
			return nil, err
		}
		if err := t.initialized(); err != nil {
			return nil, err
		}
	}

	// The fakes' own trackers are replaced by t: both clientsets share it.
	core := kubefake.NewSimpleClientset()
	core.ReactionChain = []clienttesting.Reactor{}
	core.WatchReactionChain = []clienttesting.WatchReactor{}
	core.AddReactor("*", "*", t.reaction())
	core.AddWatchReactor("*", t.watchReaction())
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cluster.ValidatorResource: cluster.Kind + "List", cluster.ApplicationGVR: cluster.ApplicationKind + "List"})
	dyn.ReactionChain = []clienttesting.Reactor{}
	dyn.WatchReactionChain = []clienttesting.WatchReactor{}
	dyn.AddReactor("*", "*", t.reaction())
	dyn.AddWatchReactor("*", t.watchReaction())

	var metrics *metricsfake.Clientset
	if opts.Kube.Metrics == nil {
		metrics = simulatedMetrics(core, opts.Kubelet.Now)
		opts.Kube.Metrics = metrics.MetricsV1beta1()
	}
	// The fakes tell client-go's informers that they do not serve
	// watch-lists (client-go's own tracker does not); t does: behind these
	// wrappers, the informers stream their initial state instead of listing
	// it whole.
	k, err := cluster.NewKubeForClients(struct{ kubernetes.Interface }{core}, struct{ dynamic.Interface }{dyn}, opts.Namespace, opts.Kube)
	if err != nil {
		return nil, err
	}
	e := &Cluster{Kube: k, core: core, dyn: dyn, tracker: t, db: db, reads: reads, namespace: opts.Namespace, fresh: fresh}
	e.kubelet = &Kubelet{
		validators: dyn.Resource(cluster.ValidatorResource).Namespace(opts.Namespace),
		list:       e.cachedValidators,
		apps: func(ctx context.Context) ([]*unstructured.Unstructured, error) {
			if err := e.Settle(ctx); err != nil {
				return nil, err
			}
			return e.Kube.CachedApplications()
		},
		applications: dyn.Resource(cluster.ApplicationGVR).Namespace(opts.Namespace),
		pods:         core.CoreV1().Pods(opts.Namespace),
		opts:         opts.Kubelet,
		log:          opts.Logger,
		// The fakes record every action (for assertions in tests); a
		// long-running cluster drops them.
		afterStep: func() {
			core.ClearActions()
			dyn.ClearActions()
			if metrics != nil {
				metrics.ClearActions()
			}
		},
	}
	return e, nil
}

// Run runs the simulated kubelet until ctx ends; Start first.
func (e *Cluster) Run(ctx context.Context) error {
	return e.kubelet.Run(ctx)
}

// Gateway is the cluster gateway over the simulated cluster.
func (e *Cluster) Gateway() *cluster.Kube { return e.Kube }

// Kubelet is the simulated kubelet (tests step it themselves).
func (e *Cluster) Kubelet() *Kubelet { return e.kubelet }

// Clientset is the typed client of the embedded cluster.
func (e *Cluster) Clientset() kubernetes.Interface { return e.core }

// Validators is the dynamic client of the Validator resources in the
// gateway's namespace.
func (e *Cluster) Validators() dynamic.ResourceInterface {
	return e.dyn.Resource(cluster.ValidatorResource).Namespace(e.namespace)
}

// Namespace is the namespace the gateway works in.
func (e *Cluster) Namespace() string { return e.namespace }

// Settle waits until the gateway's caches hold every write made so far: the
// CronJob informer every write to a CronJob labelled managed-by, the views
// (whose Validator cache release 1.11 reads too) every write to a Validator
// or Application (at most a few seconds each).
func (e *Cluster) Settle(ctx context.Context) error {
	// The CronJob informer watches the objects labelled managed-by.
	cronJobs := batchv1.Resource("cronjobs")
	if err := e.WaitSeen(ctx, cronJobs, e.tracker.lastManagedChange(cronJobs), 5*time.Second); err != nil {
		return err
	}
	// Release 2.0's views see every change of their kind.
	for _, gr := range []schema.GroupResource{cluster.ValidatorResource.GroupResource(), cluster.ApplicationGVR.GroupResource()} {
		if err := e.WaitSeen(ctx, gr, e.tracker.lastChange(gr), 5*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// Applications is the dynamic client of the Application resources in the
// gateway's namespace (tests and operators add them as kubectl would).
func (e *Cluster) Applications() dynamic.ResourceInterface {
	return e.dyn.Resource(cluster.ApplicationGVR).Namespace(e.namespace)
}

// SampleApplication is the Application a new embedded cluster has, so that
// release 2.0's application reads and metrics show something on a first run.
const SampleApplication = "sample-app"

func sampleApplication(namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.Group + "/" + cluster.Version,
		"kind":       cluster.ApplicationKind,
		"spec": map[string]any{
			"image":    "nginx:1.27",
			"replicas": int64(2),
		},
	}}
	u.SetName(SampleApplication)
	u.SetNamespace(namespace)
	return u
}

func (e *Cluster) cachedValidators(ctx context.Context) ([]cluster.CachedValidator, error) {
	if err := e.Settle(ctx); err != nil {
		return nil, err
	}
	return e.Kube.CachedValidators()
}

// Ping checks the object store, then the gateway.
func (e *Cluster) Ping(ctx context.Context) error {
	if err := e.db.PingContext(ctx); err != nil {
		return domain.Unavailable("embedded cluster: the object store is not available: %v", err)
	}
	return e.Kube.Ping(ctx)
}

// Close stops the gateway and closes the object store.
func (e *Cluster) Close() {
	e.closeOnce.Do(func() {
		e.Kube.Close()
		e.db.Close()
		e.reads.Close()
	})
}

// AddSecret creates or replaces a Secret, as an operator does with kubectl.
func (e *Cluster) AddSecret(ctx context.Context, name string, data map[string]string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.namespace}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	api := e.core.CoreV1().Secrets(e.namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			_, err = api.Create(ctx, s, metav1.CreateOptions{})
			return err
		}
		s.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
}

// AddStorageClass creates a storage class; an existing one is kept.
func (e *Cluster) AddStorageClass(ctx context.Context, name string) error {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "validator-manager.io/embedded"}
	_, err := e.core.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("add storage class: %w", err)
	}
	return nil
}

// SetDisableUserEdit sets or removes the validator's disable-user-edit
// annotation, as an operator does with kubectl.
func (e *Cluster) SetDisableUserEdit(ctx context.Context, name string, on bool) error {
	api := e.Validators()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return domain.NotFound("validator %q does not exist in the cluster", name)
		}
		if err != nil {
			return err
		}
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
		_, err = api.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
}
