package workload

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// secrets are the keys of the Secrets that exist. Whether a Secret exists
// is all the status needs of it; the Manager's cache keeps Secrets as
// records (cluster.SecretRecord), which the typed client does not read, so
// the Secret watch's own handler (events) keeps their keys here, each
// before it enqueues the Validators whose pods read the Secret.
type secrets struct {
	mu   sync.RWMutex
	keys map[types.NamespacedName]struct{}
}

func newSecrets() *secrets { return &secrets{keys: map[types.NamespacedName]struct{}{}} }

// has tells whether the Secret exists.
func (x *secrets) has(key types.NamespacedName) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.keys[key]
	return ok
}

func (x *secrets) set(o client.Object, exists bool) {
	key := client.ObjectKeyFromObject(o)
	x.mu.Lock()
	defer x.mu.Unlock()
	if exists {
		x.keys[key] = struct{}{}
	} else {
		delete(x.keys, key)
	}
}

// events is the Secret watch's handler: it keeps x, then enqueues what
// readers maps the Secret to.
func (x *secrets) events(readers handler.MapFunc) handler.Funcs {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(ctx context.Context, q queue, o client.Object) {
		for _, r := range readers(ctx, o) {
			q.Add(r)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			x.set(e.Object, true)
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			x.set(e.ObjectNew, true)
			enqueue(ctx, q, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			x.set(e.Object, false)
			enqueue(ctx, q, e.Object)
		},
	}
}
