package workload

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// pods holds the records of each validator's Pods (cluster.PodRecord, as
// the Manager's cache keeps them), by the Validator's key. The typed
// client cannot list records out of the cache, so the Pod watch's own
// handler (events) keeps them here, each before it enqueues the Validator:
// a reconcile sees at least every Pod change that queued it.
type pods struct {
	mu     sync.RWMutex
	byName map[types.NamespacedName]map[string]*cluster.PodRecord
}

func newPods() *pods {
	return &pods{byName: map[types.NamespacedName]map[string]*cluster.PodRecord{}}
}

// of is the records of validator's Pods, by name (so that the status
// names the same one of several that cannot start); shared: read only.
func (x *pods) of(validator types.NamespacedName) []*cluster.PodRecord {
	x.mu.RLock()
	out := slices.Collect(maps.Values(x.byName[validator]))
	x.mu.RUnlock()
	slices.SortFunc(out, func(a, b *cluster.PodRecord) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// owner is the key of the Validator p belongs to, and whether it has one.
func owner(p *cluster.PodRecord) (types.NamespacedName, bool) {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Validator}, p.Validator != ""
}

func (x *pods) put(p *cluster.PodRecord) {
	key, ok := owner(p)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.byName[key]
	if m == nil {
		m = map[string]*cluster.PodRecord{}
		x.byName[key] = m
	}
	m[p.Name] = p
}

func (x *pods) remove(p *cluster.PodRecord) {
	key, ok := owner(p)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.byName[key], p.Name)
	if len(x.byName[key]) == 0 {
		delete(x.byName, key)
	}
}

// events is the Pod watch's handler: it keeps x, then enqueues the
// Validator a Pod belongs to when the Pod comes or goes, or when what it
// tells the status (cause) changes.
func (x *pods) events() handler.Funcs {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(q queue, p *cluster.PodRecord) {
		if key, ok := owner(p); ok {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if p, ok := e.Object.(*cluster.PodRecord); ok {
				x.put(p)
				enqueue(q, p)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			old, ok1 := e.ObjectOld.(*cluster.PodRecord)
			cur, ok2 := e.ObjectNew.(*cluster.PodRecord)
			if !ok1 || !ok2 {
				return
			}
			moved := old.Validator != cur.Validator
			if moved {
				x.remove(old)
				enqueue(q, old)
			}
			x.put(cur)
			if moved || cause(old) != cause(cur) {
				enqueue(q, cur)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			if p, ok := e.Object.(*cluster.PodRecord); ok {
				x.remove(p)
				enqueue(q, p)
			}
		},
	}
}

// cause is what a Pod tells the status: why it cannot start, if it counts
// ("" for a terminating Pod).
func cause(p *cluster.PodRecord) string {
	if p.DeletionTimestamp != nil {
		return ""
	}
	return p.Reason + ": " + p.Message
}
