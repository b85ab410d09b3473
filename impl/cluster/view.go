package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The Application custom resource (deploy/crds/applications.validator-manager.io.yaml):
// same group and version as the Validator.
const (
	ApplicationKind     = "Application"
	ApplicationResource = "applications"
)

// ApplicationGVR is the group/version/resource of the Application custom resource.
var ApplicationGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: ApplicationResource}

// view is release 2.0's read model of one custom resource kind: every object
// of the namespace (an unfiltered informer of the Manager's cache, whatever
// wrote the object), kept encoded as it is returned (as stored, minus
// metadata.managedFields), and the sorted list encoded once per change, so
// that a read costs a copy.
//
// Each object is held encoded once: the cache's transform (encodeView)
// encodes it on its way into the cache, which keeps a viewObject (metadata
// and the encoding) instead of the decoded object; the view's map holds
// the cache's objects, and a rebuilt list takes their encodings over (each
// entry then points into the list), so that the list is no second copy. The
// status is a slice of the object's encoding, not a copy.
//
// The map follows the informer through the view's handler, which then
// tells the view's subscribers (subscribe): what one of them queues reads
// the view at least at the version that queued it. A handler of its own
// would not: client-go runs each handler of an informer on its own
// goroutine.
type view struct {
	kind domain.ResourceKind
	gvk  schema.GroupVersionKind
	gr   schema.GroupResource
	// served is false when the cluster does not serve the kind (its CRD is
	// not installed): reads then say so.
	served bool
	synced func() bool

	// mu guards served and synced (set once, by attach), objects, list,
	// seen and subscribers.
	mu      sync.RWMutex
	objects map[types.NamespacedName]*viewObject
	list    []byte // nil: to be rebuilt
	// seen is the highest resourceVersion put or removed (ListVersion).
	seen        int64
	subscribers map[*func(old, cur *viewObject)]struct{}
}

// viewEntry is an object's encoding, shared by every copy of its
// viewObject. A rebuilt list moves the encoding into itself, so it is read
// and replaced atomically (the bytes never change).
type viewEntry struct {
	object atomic.Pointer[[]byte]
	// statusStart and statusEnd bound the status in object (0, 0: none).
	statusStart, statusEnd int32
}

// encoding is the object as stored, minus managedFields.
func (e *viewEntry) encoding() []byte { return *e.object.Load() }

// status is the object's status as JSON ({} when it has none).
func (e *viewEntry) status() []byte {
	if e.statusEnd == 0 {
		return []byte("{}")
	}
	return e.encoding()[e.statusStart:e.statusEnd:e.statusEnd]
}

// viewObject is what a view's informer caches in place of a resource: the
// metadata client-go and the controllers' predicates read of it (key,
// resourceVersion, generation, deletion, owners, labels) and its encoding.
// It is a client.Object: what RecordMeta does not keep reads as empty.
type viewObject struct {
	RecordMeta
	Labels map[string]string
	entry  *viewEntry
}

var _ client.Object = (*viewObject)(nil)

func (o *viewObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (o *viewObject) GetLabels() map[string]string { return o.Labels }

// DeepCopyObject copies the metadata; the labels and the entry are shared
// (neither is ever changed: a change of the resource is a new viewObject).
func (o *viewObject) DeepCopyObject() runtime.Object {
	c := *o
	c.RecordMeta = o.RecordMeta.deepCopy()
	return &c
}

// encodeView is the views' cache transform: the object encoded. It must be
// idempotent: what it returns may come back to it. It refuses a typed
// Validator: one asked of the cache would be a second informer of
// Validators beside the one that holds their encodings (validators.go).
func encodeView(obj any) (any, error) {
	if v, ok := obj.(*v1alpha1.Validator); ok {
		return nil, fmt.Errorf("cluster: the cache holds Validators in their stored encoding only; a typed Validator (%s/%s) was asked of it: read it with cluster.ValidatorCache or DecodeValidator", v.Namespace, v.Name)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	e, err := encodeEntry(u)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	o := &viewObject{RecordMeta: metaOf(u), Labels: internedLabels(u.GetLabels()), entry: e}
	o.Name, o.ResourceVersion = strings.Clone(o.Name), strings.Clone(o.ResourceVersion)
	return o, nil
}

func newView(kind domain.ResourceKind, gvk schema.GroupVersionKind, gr schema.GroupResource) *view {
	return &view{kind: kind, gvk: gvk, gr: gr, objects: map[types.NamespacedName]*viewObject{}, subscribers: map[*func(old, cur *viewObject)]struct{}{}}
}

// attach starts following the cache's informer of the view's kind.
func (v *view) attach(ctx context.Context, c ctrlcache.Cache) error {
	informer, err := c.GetInformer(ctx, unstructuredOf(v.gvk), ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("cluster: %s informer: %w", v.kind, err)
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    v.put,
		UpdateFunc: func(_, obj any) { v.put(obj) },
		DeleteFunc: v.remove,
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	v.mu.Lock()
	v.synced, v.served = reg.HasSynced, true
	v.mu.Unlock()
	return nil
}

func (v *view) put(obj any) {
	o, ok := obj.(*viewObject)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
	v.mu.Lock()
	old := v.objects[key]
	v.objects[key] = o
	subscribers := v.changed(o)
	v.mu.Unlock()
	for _, f := range subscribers {
		(*f)(old, o)
	}
}

// changed records a put or remove of o and is what to tell of it; v.mu
// held.
func (v *view) changed(o *viewObject) []*func(old, cur *viewObject) {
	v.list = nil
	if rv, err := strconv.ParseInt(o.ResourceVersion, 10, 64); err == nil && rv > v.seen {
		v.seen = rv
	}
	out := make([]*func(old, cur *viewObject), 0, len(v.subscribers))
	for f := range v.subscribers {
		out = append(out, f)
	}
	return out
}

func (v *view) remove(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(*viewObject)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
	v.mu.Lock()
	delete(v.objects, key)
	subscribers := v.changed(o)
	v.mu.Unlock()
	for _, f := range subscribers {
		(*f)(o, nil)
	}
}

// subscribe calls f, until ctx ends, with each change once the view shows
// it: (nil, cur) for an object added, (old, cur) for one replaced, (old,
// nil) for one removed. The objects the view holds when f subscribes come
// first, as added.
func (v *view) subscribe(ctx context.Context, f func(old, cur *viewObject)) {
	v.mu.Lock()
	v.subscribers[&f] = struct{}{}
	now := make([]*viewObject, 0, len(v.objects))
	for _, o := range v.objects {
		now = append(now, o)
	}
	v.mu.Unlock()
	context.AfterFunc(ctx, func() {
		v.mu.Lock()
		delete(v.subscribers, &f)
		v.mu.Unlock()
	})
	for _, o := range now {
		f(nil, o)
	}
}

// encodeEntry encodes u as stored minus metadata.managedFields (bookkeeping
// of server-side apply, large and of no use to a reader), and its status
// alone ({} when it has none). u is not changed.
func encodeEntry(u *unstructured.Unstructured) (*viewEntry, error) {
	obj := u.Object
	if md, ok := obj["metadata"].(map[string]any); ok {
		if _, has := md["managedFields"]; has {
			trimmed := make(map[string]any, len(md))
			for k, val := range md {
				if k != "managedFields" {
					trimmed[k] = val
				}
			}
			top := make(map[string]any, len(obj))
			for k, val := range obj {
				top[k] = val
			}
			top["metadata"] = trimmed
			obj = top
		}
	}
	object, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	e := &viewEntry{}
	e.object.Store(&object)
	if st, ok := obj["status"].(map[string]any); ok {
		// The encoding of a map is its keys sorted, each value encoded as
		// it would be alone: the status is the slice after "status":.
		status, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		if i := bytes.Index(object, append([]byte(`"status":`), status...)); i >= 0 {
			start := i + len(`"status":`)
			e.statusStart, e.statusEnd = int32(start), int32(start+len(status))
		} else {
			return nil, fmt.Errorf("the status is not where its encoding says")
		}
	}
	return e, nil
}

// attached tells whether attach has run.
func (v *view) attached() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.served
}

func (v *view) ready() error {
	v.mu.RLock()
	served, synced := v.served, v.synced
	v.mu.RUnlock()
	switch {
	case !served:
		return domain.Unavailable("cluster: the %s resource (%s) was not served when the server started; apply deploy/crds, then restart the server", v.kind, v.gr)
	case synced == nil || !synced():
		return domain.Unavailable("cluster: the %s cache has not synced yet", v.kind)
	}
	return nil
}

// List is every object as a JSON array sorted by namespace then name.
func (v *view) List() ([]byte, error) {
	if err := v.ready(); err != nil {
		return nil, err
	}
	v.mu.RLock()
	list := v.list
	v.mu.RUnlock()
	if list != nil {
		return list, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.list == nil {
		keys := make([]types.NamespacedName, 0, len(v.objects))
		size := 2
		for k, o := range v.objects {
			keys = append(keys, k)
			size += len(o.entry.encoding()) + 1
		}
		slices.SortFunc(keys, func(a, b types.NamespacedName) int {
			if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		list := make([]byte, 0, size)
		list = append(list, '[')
		for i, k := range keys {
			if i > 0 {
				list = append(list, ',')
			}
			e := v.objects[k].entry
			start := len(list)
			list = append(list, e.encoding()...)
			// The entry's encoding is now kept in the list only.
			moved := list[start:len(list):len(list)]
			e.object.Store(&moved)
		}
		v.list = append(list, ']')
	}
	// Callers only read it; a change replaces it, never edits it.
	return v.list, nil
}

// ListVersion changes whenever List's answer would, and is the same on
// every replica that holds the same objects: the highest resourceVersion
// delivered (an add, an update and a watched deletion each carry a higher
// one than any before) and the number of objects (a deletion found on a
// relist carries its old version but lowers the count).
func (v *view) ListVersion() (string, error) {
	if err := v.ready(); err != nil {
		return "", err
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	return strconv.FormatInt(v.seen, 10) + "." + strconv.Itoa(len(v.objects)), nil
}

// entry is the object of that name; domain.ErrNotFound when the view has
// none.
func (v *view) entry(namespace, name string) (*viewObject, error) {
	if err := v.ready(); err != nil {
		return nil, err
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	o, ok := v.objects[types.NamespacedName{Namespace: namespace, Name: name}]
	if !ok {
		return nil, domain.NotFound("%s %q does not exist in namespace %q", strings.ToLower(string(v.kind)), name, namespace)
	}
	return o, nil
}

// names lists the objects' names, sorted.
func (v *view) names() ([]string, error) {
	if err := v.ready(); err != nil {
		return nil, err
	}
	v.mu.RLock()
	out := make([]string, 0, len(v.objects))
	for k := range v.objects {
		out = append(out, k.Name)
	}
	v.mu.RUnlock()
	slices.Sort(out)
	return out, nil
}

// ResourceList is every resource of kind in the namespace, as a JSON array
// sorted by namespace then name, from the cache (never the API server). The
// bytes are shared: read them, never change them.
func (k *Kube) ResourceList(kind domain.ResourceKind) ([]byte, error) {
	v, err := k.view(kind)
	if err != nil {
		return nil, err
	}
	return v.List()
}

// ResourceListVersion changes whenever ResourceList's answer would (the
// lists' ETag).
func (k *Kube) ResourceListVersion(kind domain.ResourceKind) (string, error) {
	v, err := k.view(kind)
	if err != nil {
		return "", err
	}
	return v.ListVersion()
}

// ResourceObject is one resource as stored (minus managedFields), as JSON;
// domain.ErrNotFound when the namespace has none of that name.
func (k *Kube) ResourceObject(kind domain.ResourceKind, name string) ([]byte, error) {
	v, err := k.view(kind)
	if err != nil {
		return nil, err
	}
	o, err := v.entry(k.namespace, name)
	if err != nil {
		return nil, err
	}
	return o.entry.encoding(), nil
}

// ResourceStatus is one resource's status as JSON ({} when it has none).
func (k *Kube) ResourceStatus(kind domain.ResourceKind, name string) ([]byte, error) {
	v, err := k.view(kind)
	if err != nil {
		return nil, err
	}
	o, err := v.entry(k.namespace, name)
	if err != nil {
		return nil, err
	}
	return o.entry.status(), nil
}

func (k *Kube) view(kind domain.ResourceKind) (*view, error) {
	if !k.synced.Load() {
		return nil, domain.Unavailable("cluster: the gateway's caches are not started (or the gateway is closed)")
	}
	switch kind {
	case domain.KindValidator:
		return k.validatorView, nil
	case domain.KindApplication:
		return k.applicationView, nil
	}
	return nil, domain.NotFound("unknown resource kind %q", kind)
}

// SyncState tells, per informer, whether its cache has synced (for the
// operational metrics).
func (k *Kube) SyncState() map[string]bool {
	out := map[string]bool{}
	out["validators.managed"] = k.synced.Load() && k.validators != nil && k.validators.HasSynced()
	out["cronjobs.managed"] = k.synced.Load() && k.cronJobs.synced()
	out["secrets"] = k.synced.Load() && k.secrets.synced()
	for name, v := range map[string]*view{"validators": k.validatorView, "applications": k.applicationView} {
		out[name] = v.ready() == nil
	}
	return out
}
