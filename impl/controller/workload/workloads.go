package workload

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// kind is a kind of workload the cache keeps as records: Deployment,
// StatefulSet or Service (a Deployment and a Service of a component share
// their name).
type kind string

const (
	deploymentKind  kind = "Deployment"
	statefulSetKind kind = "StatefulSet"
	serviceKind     kind = "Service"
)

// object is a new object of kind k.
func (k kind) object() client.Object {
	switch k {
	case deploymentKind:
		return &appsv1.Deployment{}
	case statefulSetKind:
		return &appsv1.StatefulSet{}
	}
	return &corev1.Service{}
}

// kindOf is the kind of obj, "" when the cache keeps no record of it.
func kindOf(obj client.Object) kind {
	switch obj.(type) {
	case *appsv1.Deployment:
		return deploymentKind
	case *appsv1.StatefulSet:
		return statefulSetKind
	case *corev1.Service:
		return serviceKind
	}
	return ""
}

// workloads holds the records of the Deployments, StatefulSets and
// Services the cache keeps (cluster.WorkloadRecord), by kind and key. The
// typed client cannot read records out of the cache, so each kind's watch
// has its own handler (events) keep them here, each before it enqueues
// the Validator that controls the object: a reconcile sees at least every
// change that queued it. controller-runtime starts the workers once every
// handler has been given the objects of its informer's first list.
type workloads struct {
	mu    sync.RWMutex
	byKey map[workloadKey]*cluster.WorkloadRecord
	// removed counts the records the watches removed: an apply's answer
	// for an object that had none must not bring back one removed since.
	removed uint64
}

type workloadKey struct {
	kind kind
	types.NamespacedName
}

// keyOf is w's key among records of kind k.
func keyOf(k kind, w *cluster.WorkloadRecord) workloadKey {
	return workloadKey{k, types.NamespacedName{Namespace: w.Namespace, Name: w.Name}}
}

func newWorkloads() *workloads {
	return &workloads{byKey: map[workloadKey]*cluster.WorkloadRecord{}}
}

// get is the record of the object of kind k with key, nil when there is
// none; shared: read only.
func (x *workloads) get(k kind, key types.NamespacedName) *cluster.WorkloadRecord {
	return x.lookup(k, key).record
}

// seen is what an apply was decided on: the record then (nil: none) and
// how many records the watches had removed.
type seen struct {
	record  *cluster.WorkloadRecord
	removed uint64
}

// lookup is get, with what answered needs to know whether the watches put
// or removed anything of it since.
func (x *workloads) lookup(k kind, key types.NamespacedName) seen {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return seen{x.byKey[workloadKey{k, key}], x.removed}
}

// answered puts the record of answer, what the API server answered an
// apply of an object of kind k with, in place of the record the apply was
// decided on (prev), unless the watch has put another since, or, where
// there was none, removed any record since (the object the apply made
// may be gone already, and its record must not outlive it): a reconcile
// before the watch's event of the apply (queued by another object's) then
// does not apply it again. Should the watch give an event from before the
// apply after this, the next reconcile applies again, changing nothing:
// the record is what the cache would hold, never newer.
func (x *workloads) answered(k kind, prev seen, answer *cluster.WorkloadRecord) {
	key := keyOf(k, answer)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byKey[key] != prev.record || prev.record == nil && x.removed != prev.removed {
		return
	}
	x.byKey[key] = answer
}

func (x *workloads) put(k kind, w *cluster.WorkloadRecord) {
	x.mu.Lock()
	x.byKey[keyOf(k, w)] = w
	x.mu.Unlock()
}

func (x *workloads) remove(k kind, w *cluster.WorkloadRecord) {
	x.mu.Lock()
	delete(x.byKey, keyOf(k, w))
	x.removed++
	x.mu.Unlock()
}

// controllerOf is the key of the Validator that controls w, and whether one
// does: the handler builder.Owns would make, on records.
func controllerOf(w *cluster.WorkloadRecord) (types.NamespacedName, bool) {
	ref := metav1.GetControllerOf(w)
	if ref == nil {
		return types.NamespacedName{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.WithKind(ref.Kind).GroupKind() != cluster.ValidatorGVK.GroupKind() {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: w.Namespace, Name: ref.Name}, true
}

// events is the handler of kind k's watch: it keeps x, then enqueues the
// Validator that controls the object (before and after an update, should
// its controller change).
func (x *workloads) events(k kind) handler.Funcs {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(q queue, w *cluster.WorkloadRecord) {
		if key, ok := controllerOf(w); ok {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if w, ok := e.Object.(*cluster.WorkloadRecord); ok {
				x.put(k, w)
				enqueue(q, w)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			old, ok1 := e.ObjectOld.(*cluster.WorkloadRecord)
			cur, ok2 := e.ObjectNew.(*cluster.WorkloadRecord)
			if !ok1 || !ok2 {
				return
			}
			x.put(k, cur)
			enqueue(q, old)
			enqueue(q, cur)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			if w, ok := e.Object.(*cluster.WorkloadRecord); ok {
				x.remove(k, w)
				enqueue(q, w)
			}
		},
	}
}
