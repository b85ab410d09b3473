// Package nodesim plays the scheduler and the kubelet of one node against a
// real API server, for the embedded default, which runs no kubelet: it binds
// the Pods that fit, reports them running unless a kubelet would refuse them
// (kubelet.go), provisions their volumes and runs Applications as Deployments
// (docs/decisions.md, "Node simulator"). Never run it against a real cluster.
package nodesim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/validator-manager/validator-manager/impl/controller/backoff"
)

// Options tune the simulator; zero values take the defaults.
type Options struct {
	// NodeName is the simulated node; default "embedded-node".
	NodeName string
	// SchedulerName is the scheduler whose Pods the simulator binds, as
	// each scheduler binds only its own; default "default-scheduler".
	SchedulerName string
	// Namespace whose Pods, claims and Applications are simulated; default
	// every namespace.
	Namespace string
	// ReadyDelay is how long after binding a Pod is reported running and
	// ready (a Job's Pod: succeeded); default 1 s.
	ReadyDelay time.Duration
	// Capacity of the node, all of it allocatable (room.go); what it does
	// not give is the default: 64 CPUs, 256Gi memory, 10,000 Pods.
	Capacity corev1.ResourceList
	// MetricsAddress, when set, is where the simulator serves its Pods'
	// usage (MetricsPath) and /metrics, for a server in another process.
	MetricsAddress string
	// Resync is how often the simulator's cache hands it every object
	// again; default Resync.
	Resync time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Workers of each controller and the client's rate, chosen by
// BenchmarkPodsStarted: more only queue on the API server (client-go's 5/10
// would start a few Pods a second).
const (
	workers = 16
	qps     = 400
	burst   = 800
)

func defaultCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("10000"),
	}
}

func (o *Options) defaults() {
	o.NodeName = cmp.Or(o.NodeName, "embedded-node")
	o.SchedulerName = cmp.Or(o.SchedulerName, corev1.DefaultSchedulerName)
	if o.ReadyDelay <= 0 {
		o.ReadyDelay = time.Second
	}
	capacity := defaultCapacity()
	maps.Copy(capacity, o.Capacity)
	o.Capacity = capacity
	if o.Resync <= 0 {
		o.Resync = Resync
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
}

// Simulator is the node simulator; Start runs it.
type Simulator struct {
	mgr    manager.Manager
	client client.Client // reads from the simulator's cache
	api    client.Reader // reads from the API server
	events kubernetes.Interface
	opts   Options
	log    *slog.Logger

	// kubelet and scheduler record the events those would; set by Start.
	kubelet, scheduler record.EventRecorder

	started atomic.Bool
	ready   chan struct{} // closed when the caches have synced and the node exists
	metrics *Metrics
	room    *room // what the Pods bound to the node request (room.go)
	db      databases
}

// New builds a simulator over the API server of rc (its QPS and burst are
// the simulator's own); Start runs it.
func New(rc *rest.Config, opts Options) (*Simulator, error) {
	opts.defaults()
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = qps, burst
	// Over loopback gzip saves nothing and costs both ends CPU.
	rc.DisableCompression = true
	s := &Simulator{opts: opts, log: opts.Logger, ready: make(chan struct{}), metrics: &Metrics{}, room: newRoom(opts.Capacity),
		db: databases{accepted: map[string][32]byte{}}}
	metrics := metricsserver.Options{BindAddress: "0"}
	if opts.MetricsAddress != "" {
		metrics = metricsserver.Options{BindAddress: opts.MetricsAddress,
			ExtraHandlers: map[string]http.Handler{MetricsPath: s.metrics.Handler()}}
	}
	mgr, err := manager.New(rc, manager.Options{
		Scheme:                 clientgoscheme.Scheme,
		Cache:                  cacheOptions(opts.Namespace, opts.Resync),
		Metrics:                metrics,
		HealthProbeBindAddress: "0",
		Logger:                 logr.FromSlogHandler(opts.Logger.Handler()),
		// Tests run several simulators, with the same controllers, in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	if s.events, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	s.mgr, s.client, s.api = mgr, mgr.GetClient(), mgr.GetAPIReader()
	s.metrics.pods = s.client
	if err := s.setup(); err != nil {
		return nil, fmt.Errorf("nodesim: %w", err)
	}
	return s, nil
}

// cacheOptions hold of each kind only what the rules read.
func cacheOptions(namespace string, resync time.Duration) cache.Options {
	in := func(t toolscache.TransformFunc) cache.ByObject {
		if namespace == "" {
			return cache.ByObject{Transform: t}
		}
		// Per namespace: a ByObject transform without its namespaces would
		// lose to the DefaultNamespaces' defaulted one.
		return cache.ByObject{Namespaces: map[string]cache.Config{namespace: {Transform: t}}}
	}
	o := cache.Options{
		SyncPeriod:       &resync,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:           in(keysOnly),
			&corev1.ConfigMap{}:        in(keysOnly),
			&appsv1.Deployment{}:       in(trimDeployment),
			&corev1.PersistentVolume{}: {Label: labels.SelectorFromSet(labels.Set{provisionedLabel: "true"})},
		},
	}
	if namespace != "" {
		o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return o
}

// Resync is how often the simulator's cache hands every object to its
// controllers again, so that an object whose event was dropped during a
// fault is simulated within a minute of it clearing, as a kubelet's periodic
// sync does (docs/decisions.md, "A missed event is never final").
const Resync = 25 * time.Second

// setup indexes the Pods by what they read and makes the controllers. The
// informers are made now, so that the first sync, which Ready waits for,
// covers them all.
func (s *Simulator) setup() error {
	ctx := context.Background()
	for _, o := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &corev1.Secret{}, &corev1.ConfigMap{},
		&corev1.PersistentVolume{}, &appsv1.Deployment{}, application()} {
		if _, err := s.mgr.GetCache().GetInformer(ctx, o); err != nil {
			return fmt.Errorf("informer of %T: %w", o, err)
		}
	}
	for index, refs := range map[string]func(*corev1.Pod) []string{claimIndex: podClaims, secretIndex: podSecrets, configMapIndex: podConfigMaps} {
		err := s.mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, index, func(o client.Object) []string {
			return refs(o.(*corev1.Pod))
		})
		if err != nil {
			return fmt.Errorf("index pods by %s: %w", index, err)
		}
	}
	workers := controller.Options{MaxConcurrentReconciles: workers, RateLimiter: backoff.RateLimiter[reconcile.Request](5 * time.Millisecond)}
	for _, c := range []struct {
		b    *builder.Builder
		sync step
	}{
		// A claim, Secret or ConfigMap that changes reaches the Pods that
		// read it, and a Pod that leaves the node those waiting for room.
		{ctrl.NewControllerManagedBy(s.mgr).Named("nodesim-pod").For(&corev1.Pod{}).
			WatchesRawSource(source.Channel(s.room.retry, &handler.EnqueueRequestForObject{})).
			Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(s.podsReading(claimIndex))).
			Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(s.podsReading(secretIndex))).
			Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(s.podsReading(configMapIndex))), s.syncPod},
		{ctrl.NewControllerManagedBy(s.mgr).Named("nodesim-claim").For(&corev1.PersistentVolumeClaim{}), s.syncClaim},
		{ctrl.NewControllerManagedBy(s.mgr).Named("nodesim-volume").For(&corev1.PersistentVolume{}), s.syncVolume},
		{ctrl.NewControllerManagedBy(s.mgr).Named("nodesim-application").For(application()).Owns(&appsv1.Deployment{}), s.syncApplication},
	} {
		if err := c.b.WithOptions(workers).Complete(s.reconciler(c.sync)); err != nil {
			return err
		}
	}
	// controller-runtime starts runnables after the caches' first sync.
	return s.mgr.Add(manager.RunnableFunc(func(context.Context) error {
		close(s.ready)
		s.log.Info("nodesim: node ready", "node", s.opts.NodeName, "readyDelay", s.opts.ReadyDelay.String())
		return nil
	}))
}

// step is one controller's work on one object: how long until its next
// step is due (0: none, until it changes).
type step func(ctx context.Context, key client.ObjectKey) (time.Duration, error)

// reconciler runs a sync. A conflict is no error: the object changed since
// the cache's copy, and that change enqueues it again.
func (s *Simulator) reconciler(f step) reconcile.Func {
	return func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		after, err := f(ctx, req.NamespacedName)
		switch {
		case ctx.Err() != nil, apierrors.IsConflict(err):
			return reconcile.Result{}, nil
		case err != nil:
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: after}, nil
	}
}

// podsReading maps an object to the Pods whose index refers to it.
func (s *Simulator) podsReading(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var pods corev1.PodList
		if err := s.client.List(ctx, &pods, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
			s.log.Warn("nodesim: pods reading", "index", index, "namespace", o.GetNamespace(), "name", o.GetName(), "err", err)
			return nil
		}
		out := make([]reconcile.Request, 0, len(pods.Items))
		for i := range pods.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
		}
		return out
	}
}

// Metrics is the simulated metrics.k8s.io of the Pods this simulator runs.
func (s *Simulator) Metrics() *Metrics { return s.metrics }

// Ready is closed once Start has registered the node and filled its caches.
func (s *Simulator) Ready() <-chan struct{} { return s.ready }

// NodeName is the simulated node's name.
func (s *Simulator) NodeName() string { return s.opts.NodeName }

// NeedLeaderElection is false: the embedded default runs one server.
func (s *Simulator) NeedLeaderElection() bool { return false }

// Start registers the node, then simulates until ctx ends (a
// controller-runtime Runnable). It may run once.
func (s *Simulator) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("nodesim: already started")
	}
	if err := s.registerNode(ctx); err != nil {
		return fmt.Errorf("nodesim: register node %s: %w", s.opts.NodeName, err)
	}
	if err := s.ensureStorageClass(ctx); err != nil {
		return fmt.Errorf("nodesim: storage class %s: %w", storageClass, err)
	}
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.events.CoreV1().Events("")})
	s.kubelet = events.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "kubelet", Host: s.opts.NodeName})
	s.scheduler = events.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: s.opts.SchedulerName})
	return s.mgr.Start(ctx)
}

// registerNode creates the node, or takes it over after a restart, and
// reports it Ready. No heartbeat: the node lifecycle controller does not run.
func (s *Simulator) registerNode(ctx context.Context) error {
	n := &corev1.Node{}
	err := s.api.Get(ctx, client.ObjectKey{Name: s.opts.NodeName}, n)
	if apierrors.IsNotFound(err) {
		n = &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   s.opts.NodeName,
			Labels: map[string]string{corev1.LabelHostname: s.opts.NodeName, corev1.LabelOSStable: "linux", "node.kubernetes.io/simulated": "true"},
		}}
		err = s.client.Create(ctx, n)
	}
	if err != nil {
		return err
	}
	before := n.Status.DeepCopy()
	now := metav1.Now()
	n.Status.Capacity = s.opts.Capacity.DeepCopy()
	n.Status.Allocatable = s.opts.Capacity.DeepCopy()
	n.Status.Phase = corev1.NodeRunning
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: hostIP}, {Type: corev1.NodeHostName, Address: s.opts.NodeName}}
	n.Status.NodeInfo.KubeletVersion = "nodesim"
	n.Status.NodeInfo.OperatingSystem = "linux"
	n.Status.NodeInfo.Architecture = "amd64"
	// A condition that holds already keeps its times, so that a restart
	// over a registered node writes nothing.
	cond := func(t corev1.NodeConditionType, st corev1.ConditionStatus, reason string) corev1.NodeCondition {
		for _, c := range before.Conditions {
			if c.Type == t && c.Status == st && c.Reason == reason {
				return c
			}
		}
		return corev1.NodeCondition{Type: t, Status: st, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	n.Status.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
	}
	if equality.Semantic.DeepEqual(before, &n.Status) {
		return nil
	}
	return s.client.Status().Update(ctx, n)
}
