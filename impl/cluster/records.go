package cluster

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// records is what the gateway reads of a kind the Manager's cache keeps as
// records (SecretRecord, CronJobRecord): the typed client cannot read a
// record out of the cache, so the informer's handler keeps them here by
// name, those of the gateway's namespace, and then tells of the change
// (changed). The map lags the cache's store by that handler's call, so a
// reconcile must be queued by changed, not by a watch of its own: one
// queued by another handler of the same informer could read the map
// before it has the change that queued it. The map holds the cache's own
// records: read them, never change them.
type records[T client.Object] struct {
	namespace string
	mu        sync.RWMutex
	byName    map[string]T
	// synced tells whether the handler has been given the informer's
	// first list.
	synced func() bool
	// changed is called with each record put or removed, once get shows
	// the change.
	changed func(T)
}

func newRecords[T client.Object](namespace string, changed func(T)) *records[T] {
	return &records[T]{namespace: namespace, byName: map[string]T{}, synced: func() bool { return false }, changed: changed}
}

// attach asks c for the informer of obj's kind and adds the handler.
func (r *records[T]) attach(ctx context.Context, c ctrlcache.Cache, obj client.Object) error {
	informer, err := c.GetInformer(ctx, obj, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("cluster: %T informer: %w", obj, err)
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    r.put,
		UpdateFunc: func(_, obj any) { r.put(obj) },
		DeleteFunc: r.remove,
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	r.synced = reg.HasSynced
	return nil
}

func (r *records[T]) put(obj any) {
	if o, ok := obj.(T); ok && o.GetNamespace() == r.namespace {
		r.mu.Lock()
		r.byName[o.GetName()] = o
		r.mu.Unlock()
		r.changed(o)
	}
}

func (r *records[T]) remove(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if o, ok := obj.(T); ok && o.GetNamespace() == r.namespace {
		r.mu.Lock()
		delete(r.byName, o.GetName())
		r.mu.Unlock()
		r.changed(o)
	}
}

// get is the record of that name; false when there is none.
func (r *records[T]) get(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	o, ok := r.byName[name]
	return o, ok
}

// WatchRecords calls f, until ctx ends, with the name of the managed
// validator that each change of a Secret or backup CronJob belongs to,
// once the gateway's reads show the change (the intent controller's
// source: it reads what it reconciles through the gateway).
func (k *Kube) WatchRecords(ctx context.Context, f func(validator string)) {
	w := &f
	k.watchersMu.Lock()
	k.watchers[w] = struct{}{}
	k.watchersMu.Unlock()
	context.AfterFunc(ctx, func() {
		k.watchersMu.Lock()
		delete(k.watchers, w)
		k.watchersMu.Unlock()
	})
}

// recordChanged tells WatchRecords' callers of a change of validator's
// Secret or CronJob ("": of none).
func (k *Kube) recordChanged(validator string) {
	if validator == "" {
		return
	}
	k.watchersMu.Lock()
	watchers := make([]*func(string), 0, len(k.watchers))
	for w := range k.watchers {
		watchers = append(watchers, w)
	}
	k.watchersMu.Unlock()
	for _, w := range watchers {
		(*w)(validator)
	}
}

// cronJobValidator names the managed validator whose resource controls cj,
// "" for any other CronJob.
func (k *Kube) cronJobValidator(cj metav1.Object) string {
	ref := metav1.GetControllerOf(cj)
	if ref == nil || ref.Kind != Kind || ref.APIVersion != ValidatorGVK.GroupVersion().String() {
		return ""
	}
	if !k.managesCached(ref.Name) {
		return ""
	}
	return ref.Name
}
