package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
	"unique"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	sigsjson "sigs.k8s.io/json"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The Manager's cache holds each Validator once, as release 2.0 returns it:
// its stored encoding (viewObject), with the metadata the informer and the
// controllers' predicates read (key, generation, deletion, labels). A
// reader that wants the typed Validator decodes it from that encoding
// (ValidatorCache, DecodeValidator), which is exact: it is what the API
// server sent, minus managedFields. The typed Validator is never cached:
// the cache's transform refuses it (encodeView), so that a typed read of
// the cache, which would start a second informer of Validators, fails
// instead of doubling their memory.

// ValidatorObject is the kind of the Validators' informer, as the Manager's
// cache is asked for it: the events it gives carry the cache's objects
// (DecodeValidator, ValidatorStatus read them).
func ValidatorObject() client.Object { return unstructuredOf(ValidatorGVK) }

// DecodeValidator is the typed Validator of obj, an object of the
// Validators' informer (an event's); false for anything else. Each call
// decodes: the result is the caller's.
func DecodeValidator(obj any) (*v1alpha1.Validator, bool) {
	o, ok := obj.(*viewObject)
	if !ok {
		return nil, false
	}
	v, err := o.validator()
	return v, err == nil
}

// ValidatorStatus is the status of obj, an object of the Validators'
// informer, as stored (JSON, {} when it has none); false for anything else.
// The bytes are the cache's: read them, never change them.
func ValidatorStatus(obj any) ([]byte, bool) {
	o, ok := obj.(*viewObject)
	if !ok {
		return nil, false
	}
	return o.entry.status(), true
}

func (o *viewObject) validator() (*v1alpha1.Validator, error) {
	v := &v1alpha1.Validator{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(o.entry.encoding(), v); err != nil {
		return nil, fmt.Errorf("cluster: decode validator %s/%s: %w", o.Namespace, o.Name, err)
	}
	return v, nil
}

// internedLabels is a copy of l with its keys and values interned: the
// labels of managed Validators repeat but for the validator's name.
func internedLabels(l map[string]string) map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return out
}

// ValidatorCache is a reader's Validators: a view of the Validators'
// informer (the cache's objects by key, no copy), read typed, each read
// decoded, and the source of that reader's reconciles (Source): a
// reconcile it queues reads at least the version that queued it.
type ValidatorCache struct {
	v *view
	// index, when set (AddIndex), files each Validator under its values
	// (a slice: nearly every value is one Validator's own, and a map per
	// value cost some 200 bytes each; a value many share is scanned only
	// when one of them changes what it is filed under, or goes); filed is
	// what each is filed under.
	indexMu sync.RWMutex
	index   map[string][]types.NamespacedName
	filed   map[types.NamespacedName][]string
}

// NewValidatorCache is a reader's view of the Validators of c's informer
// (created when it is not yet, and started with the cache).
func NewValidatorCache(ctx context.Context, c ctrlcache.Cache) (*ValidatorCache, error) {
	v := newView(domain.KindValidator, ValidatorGVK, ValidatorResource.GroupResource())
	if err := v.attach(ctx, c); err != nil {
		return nil, err
	}
	return &ValidatorCache{v: v}, nil
}

// HasSynced tells whether the view holds the informer's first list.
func (c *ValidatorCache) HasSynced() bool { return c.v.ready() == nil }

// Get is the Validator of that key, decoded; a NotFound error (apierrors)
// when the view has none.
func (c *ValidatorCache) Get(key types.NamespacedName) (*v1alpha1.Validator, error) {
	o, err := c.object(key)
	if err != nil {
		return nil, err
	}
	return o.validator()
}

func (c *ValidatorCache) object(key types.NamespacedName) (*viewObject, error) {
	c.v.mu.RLock()
	o, ok := c.v.objects[key]
	c.v.mu.RUnlock()
	if !ok {
		return nil, apierrors.NewNotFound(ValidatorResource.GroupResource(), key.Name)
	}
	return o, nil
}

// Names are the names of the namespace's Validators whose labels match
// selector, in no order.
func (c *ValidatorCache) Names(namespace string, selector labels.Selector) []string {
	c.v.mu.RLock()
	defer c.v.mu.RUnlock()
	var out []string
	for k, o := range c.v.objects {
		if k.Namespace == namespace && selector.Matches(labels.Set(o.Labels)) {
			out = append(out, k.Name)
		}
	}
	return out
}

// AddIndex files each Validator under what values gives of it, decoded
// (ByIndex). values reads the Validator's key and spec only: a change that
// keeps its generation (its status, its metadata) is not refiled, nor
// decoded. Call it once, before the cache starts.
func (c *ValidatorCache) AddIndex(ctx context.Context, values func(*v1alpha1.Validator) []string) {
	c.index, c.filed = map[string][]types.NamespacedName{}, map[types.NamespacedName][]string{}
	c.v.subscribe(ctx, func(old, cur *viewObject) {
		if old != nil && cur != nil && old.Generation != 0 && old.Generation == cur.Generation {
			return
		}
		var (
			key  types.NamespacedName
			vals []string
		)
		if cur != nil {
			key = types.NamespacedName{Namespace: cur.Namespace, Name: cur.Name}
			if v, err := cur.validator(); err == nil {
				vals = values(v)
				slices.Sort(vals)
				vals = slices.Clip(slices.Compact(vals))
			}
		} else {
			key = types.NamespacedName{Namespace: old.Namespace, Name: old.Name}
		}
		c.indexMu.Lock()
		defer c.indexMu.Unlock()
		if cur != nil && slices.Equal(c.filed[key], vals) {
			return // a new spec that reads what the last one did
		}
		for _, val := range c.filed[key] {
			if keys := slices.DeleteFunc(c.index[val], func(k types.NamespacedName) bool { return k == key }); len(keys) == 0 {
				delete(c.index, val)
			} else {
				c.index[val] = keys
			}
		}
		delete(c.filed, key)
		for _, val := range vals {
			c.index[val] = append(c.index[val], key)
		}
		if len(vals) > 0 {
			c.filed[key] = vals
		}
	})
}

// ByIndex are the keys of the Validators filed under value.
func (c *ValidatorCache) ByIndex(value string) []types.NamespacedName {
	c.indexMu.RLock()
	defer c.indexMu.RUnlock()
	return slices.Clone(c.index[value])
}

// Source is a controller's source of the Validators' changes, each passed
// through preds (as their Create, Update or Delete) before it queues the
// Validator: queued once the view shows the change, so that the reconcile
// reads it. It syncs with the view.
func (c *ValidatorCache) Source(preds ...predicate.Predicate) source.Source {
	return validatorSource{c: c, preds: preds}
}

type validatorSource struct {
	c     *ValidatorCache
	preds []predicate.Predicate
}

func (s validatorSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.c.v.subscribe(ctx, func(old, cur *viewObject) {
		for _, p := range s.preds {
			var pass bool
			switch {
			case old == nil:
				pass = p.Create(event.CreateEvent{Object: cur})
			case cur == nil:
				pass = p.Delete(event.DeleteEvent{Object: old})
			default:
				pass = p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur})
			}
			if !pass {
				return
			}
		}
		o := cur
		if o == nil {
			o = old
		}
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}})
	})
	return nil
}

func (s validatorSource) WaitForSync(ctx context.Context) error {
	if !waitSynced(ctx, s.c.HasSynced) {
		return fmt.Errorf("cluster: the Validators' view did not sync: %w", ctx.Err())
	}
	return nil
}

// waitSynced waits until synced tells so, looking every 5 ms (a handler's
// sync has no notification); false when ctx ends first.
func waitSynced(ctx context.Context, synced func() bool) bool {
	for !synced() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return true
}

func (s validatorSource) String() string { return "validators view" }

// CachedValidator is what the cache holds of v (its transform applied to v
// as the API server would send it): what a predicate or a handler of the
// Validators' informer is given.
func CachedValidator(v *v1alpha1.Validator) (client.Object, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(ValidatorGVK)
	o, err := encodeView(u)
	if err != nil {
		return nil, err
	}
	return o.(client.Object), nil
}
