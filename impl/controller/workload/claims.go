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

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// claims holds the records of the PersistentVolumeClaims
// (cluster.ClaimRecord, as the Manager's cache keeps them), by key: the
// typed client cannot read a record out of the cache, so the claim watch's
// own handler (events) keeps them here. A claim's change queues nothing: a
// reconcile reads claims (whether one exists, whether it must grow) on
// behalf of its Validator's changes, as it read them from the cache's
// store before.
type claims struct {
	mu    sync.RWMutex
	byKey map[types.NamespacedName]*cluster.ClaimRecord
}

func newClaims() *claims { return &claims{byKey: map[types.NamespacedName]*cluster.ClaimRecord{}} }

// get is the record of the claim of that key, nil when there is none;
// shared: read only.
func (x *claims) get(key types.NamespacedName) *cluster.ClaimRecord {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byKey[key]
}

func (x *claims) set(o client.Object, exists bool) {
	c, ok := o.(*cluster.ClaimRecord)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if exists {
		x.byKey[client.ObjectKeyFromObject(c)] = c
	} else {
		delete(x.byKey, client.ObjectKeyFromObject(c))
	}
}

// events is the claim watch's handler: it keeps x.
func (x *claims) events() handler.Funcs {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ queue) { x.set(e.Object, true) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ queue) { x.set(e.ObjectNew, true) },
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ queue) { x.set(e.Object, false) },
	}
}
