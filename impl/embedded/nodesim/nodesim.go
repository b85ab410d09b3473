// Package nodesim plays the scheduler and the kubelet of one node against a
// real API server, for the embedded default (which runs no kubelet and no
// container runtime): it registers a Ready node, binds every unscheduled Pod
// to it, and a little later reports the Pod running and ready (Pods of Jobs:
// succeeded), unless the kubelet's rules that need no image say a kubelet
// could not start it (kubelet.go): then it waits as on a node, with the
// kubelet's reasons and messages, until what it lacks exists. Everything else is the real control plane's: the Deployment,
// StatefulSet, Job and CronJob controllers see those Pods and move their
// workloads' status as on a cluster. It also provisions the volumes claimed
// by Pods, keeps the embedded default's Applications running as Deployments,
// and reports simulated usage of the Pods it runs (Metrics). Never run it
// against a real cluster.
package nodesim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// Options tune the simulator; zero values take the defaults.
type Options struct {
	// NodeName is the simulated node; default "embedded-node".
	NodeName string
	// Namespace whose Pods, claims and Applications are simulated; default
	// every namespace.
	Namespace string
	// ReadyDelay is how long after binding a Pod is reported running and
	// ready (a Job's Pod: succeeded); default 1 s.
	ReadyDelay time.Duration
	// Capacity of the node; default 64 CPUs, 256Gi memory, 1,000 Pods.
	Capacity corev1.ResourceList
	// StorageClass is made (as the default class) when absent, so claims
	// that name no class get one; default "standard"; "-" makes none.
	StorageClass string
	// Workers process the queue; default 4.
	Workers int
	// Now is the clock of the simulated usage; default time.Now.
	Now func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.NodeName == "" {
		o.NodeName = "embedded-node"
	}
	if o.ReadyDelay <= 0 {
		o.ReadyDelay = time.Second
	}
	if o.Capacity == nil {
		o.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("64"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("1000"),
		}
	}
	if o.StorageClass == "" {
		o.StorageClass = "standard"
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// kind says what a queue key names.
type kind uint8

const (
	podKey kind = iota
	claimKey
	volumeKey
	applicationKey
)

type key struct {
	kind            kind
	namespace, name string
}

// Simulator is the node simulator; Start runs it.
type Simulator struct {
	core  kubernetes.Interface
	dyn   dynamic.Interface
	opts  Options
	log   *slog.Logger
	queue workqueue.TypedRateLimitingInterface[key]

	factories  []factory
	pods       corelisters.PodLister
	podIndex   cache.Indexer
	claims     corelisters.PersistentVolumeClaimLister
	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister
	volumes    corelisters.PersistentVolumeLister
	deploys    appslisters.DeploymentLister
	apps       cache.GenericLister
	synced     []cache.InformerSynced

	// kubelet and scheduler record the events those would; set by Start.
	kubelet, scheduler record.EventRecorder

	started sync.Once
	ready   chan struct{} // closed when the caches have synced and the node exists
	metrics *Metrics
}

// New builds a simulator over the API server of core and dyn (the same
// server); Start runs it.
func New(core kubernetes.Interface, dyn dynamic.Interface, opts Options) *Simulator {
	opts.defaults()
	s := &Simulator{
		core: core, dyn: dyn, opts: opts, log: opts.Logger,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[key](),
			workqueue.TypedRateLimitingQueueConfig[key]{Name: "nodesim"}),
		ready: make(chan struct{}),
	}
	typed := informers.NewSharedInformerFactoryWithOptions(core, 0, informers.WithNamespace(opts.Namespace))
	// Volumes are cluster-scoped: their own factory.
	volFactory := informers.NewSharedInformerFactory(core, 0)
	dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, opts.Namespace, nil)
	s.factories = []factory{typed, volFactory, dynFactory}

	podInf := typed.Core().V1().Pods()
	utilruntime.Must(podInf.Informer().AddIndexers(cache.Indexers{claimIndex: podClaims, secretIndex: podSecrets, configMapIndex: podConfigMaps}))
	s.pods, s.podIndex = podInf.Lister(), podInf.Informer().GetIndexer()
	_, _ = podInf.Informer().AddEventHandler(s.handler(podKey))

	// Claims, Secrets and ConfigMaps: a change reaches the Pods that wait
	// for them (level-triggered: a Pod starts once what it needs exists).
	claimInf := typed.Core().V1().PersistentVolumeClaims()
	s.claims = claimInf.Lister()
	_, _ = claimInf.Informer().AddEventHandler(s.dependency(claimIndex, func(m metav1.Object) {
		s.queue.Add(key{kind: claimKey, namespace: m.GetNamespace(), name: m.GetName()})
	}))
	secretInf := typed.Core().V1().Secrets()
	utilruntime.Must(secretInf.Informer().SetTransform(keysOnly))
	s.secrets = secretInf.Lister()
	_, _ = secretInf.Informer().AddEventHandler(s.dependency(secretIndex, nil))
	configMapInf := typed.Core().V1().ConfigMaps()
	utilruntime.Must(configMapInf.Informer().SetTransform(keysOnly))
	s.configMaps = configMapInf.Lister()
	_, _ = configMapInf.Informer().AddEventHandler(s.dependency(configMapIndex, nil))
	volInf := volFactory.Core().V1().PersistentVolumes()
	s.volumes = volInf.Lister()
	_, _ = volInf.Informer().AddEventHandler(s.handler(volumeKey))

	depInf := typed.Apps().V1().Deployments()
	s.deploys = depInf.Lister()
	_, _ = depInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.deploymentChanged(o) },
		UpdateFunc: func(_, o any) { s.deploymentChanged(o) },
		DeleteFunc: func(o any) { s.deploymentChanged(o) },
	})
	appInf := dynFactory.ForResource(ApplicationGVR)
	s.apps = appInf.Lister()
	_, _ = appInf.Informer().AddEventHandler(s.handler(applicationKey))

	s.synced = []cache.InformerSynced{podInf.Informer().HasSynced, claimInf.Informer().HasSynced,
		secretInf.Informer().HasSynced, configMapInf.Informer().HasSynced,
		volInf.Informer().HasSynced, depInf.Informer().HasSynced, appInf.Informer().HasSynced}
	s.metrics = &Metrics{pods: s.pods, now: opts.Now}
	return s
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
	first := false
	s.started.Do(func() { first = true })
	if !first {
		return errors.New("nodesim: already started")
	}
	defer s.queue.ShutDown()
	if err := s.registerNode(ctx); err != nil {
		return fmt.Errorf("nodesim: register node %s: %w", s.opts.NodeName, err)
	}
	if err := s.ensureStorageClass(ctx); err != nil {
		return fmt.Errorf("nodesim: storage class %s: %w", s.opts.StorageClass, err)
	}
	events := record.NewBroadcaster(record.WithContext(ctx))
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.core.CoreV1().Events("")})
	s.kubelet = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: s.opts.NodeName})
	s.scheduler = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "default-scheduler"})
	for _, f := range s.factories {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return ctx.Err()
	}
	close(s.ready)
	s.log.Info("nodesim: node ready", "node", s.opts.NodeName, "readyDelay", s.opts.ReadyDelay.String())
	var wg sync.WaitGroup
	for range s.opts.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, s.worker, time.Second) })
	}
	<-ctx.Done()
	s.queue.ShutDown()
	wg.Wait()
	return nil
}

func (s *Simulator) handler(k kind) cache.ResourceEventHandler {
	add := func(o any) {
		if m, err := metaOf(o); err == nil {
			s.queue.Add(key{kind: k, namespace: m.GetNamespace(), name: m.GetName()})
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o any) { add(o) }, DeleteFunc: add}
}

// dependency handles an object Pods depend on: also (self, when not nil)
// its own queue key, then the Pods that index refers to it.
func (s *Simulator) dependency(index string, self func(metav1.Object)) cache.ResourceEventHandler {
	changed := func(o any) {
		m, err := metaOf(o)
		if err != nil {
			return
		}
		if self != nil {
			self(m)
		}
		pods, _ := s.podIndex.ByIndex(index, m.GetNamespace()+"/"+m.GetName())
		for _, p := range pods {
			if p, ok := p.(*corev1.Pod); ok {
				s.queue.Add(key{kind: podKey, namespace: p.Namespace, name: p.Name})
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed}
}

func metaOf(o any) (metav1.Object, error) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	return meta.Accessor(o)
}

func (s *Simulator) worker(ctx context.Context) {
	for s.next(ctx) {
	}
}

func (s *Simulator) next(ctx context.Context) bool {
	k, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(k)
	var after time.Duration
	var err error
	switch k.kind {
	case podKey:
		after, err = s.syncPod(ctx, k.namespace, k.name)
	case claimKey:
		err = s.syncClaim(ctx, k.namespace, k.name)
	case volumeKey:
		err = s.syncVolume(ctx, k.name)
	case applicationKey:
		err = s.syncApplication(ctx, k.namespace, k.name)
	}
	switch {
	case err != nil && ctx.Err() == nil:
		if !apierrors.IsConflict(err) {
			s.log.Warn("nodesim: sync failed, retrying", "kind", k.kind, "namespace", k.namespace, "name", k.name, "err", err)
		}
		s.queue.AddRateLimited(k)
	case after > 0:
		s.queue.Forget(k)
		s.queue.AddAfter(k, after)
	default:
		s.queue.Forget(k)
	}
	return true
}

// registerNode creates the node, or takes it over after a restart, and
// reports it Ready with its capacity. The node lifecycle controller does not
// run on the embedded default, so no heartbeat is needed to stay Ready.
func (s *Simulator) registerNode(ctx context.Context) error {
	nodes := s.core.CoreV1().Nodes()
	n, err := nodes.Get(ctx, s.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		n, err = nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   s.opts.NodeName,
			Labels: map[string]string{corev1.LabelHostname: s.opts.NodeName, corev1.LabelOSStable: "linux", "node.kubernetes.io/simulated": "true"},
		}}, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.NewTime(s.opts.Now())
	n = n.DeepCopy()
	n.Status.Capacity = s.opts.Capacity.DeepCopy()
	n.Status.Allocatable = s.opts.Capacity.DeepCopy()
	n.Status.Phase = corev1.NodeRunning
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: hostIP}, {Type: corev1.NodeHostName, Address: s.opts.NodeName}}
	n.Status.NodeInfo.KubeletVersion = "nodesim"
	n.Status.NodeInfo.OperatingSystem = "linux"
	n.Status.NodeInfo.Architecture = "amd64"
	cond := func(t corev1.NodeConditionType, st corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: st, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	n.Status.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
	}
	_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// factory is an informer factory, typed or dynamic.
type factory interface {
	Start(stop <-chan struct{})
	Shutdown()
}
