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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"

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
// encodes it on its way into the cache, which keeps a viewObject (key,
// resourceVersion and the encoding) instead of the decoded object; the
// entries share those encodings, and a rebuilt list takes them over (each
// entry then points into the list), so that the list is no second copy. The
// status is a slice of the object's encoding, not a copy.
type view struct {
	kind domain.ResourceKind
	gvk  schema.GroupVersionKind
	gr   schema.GroupResource
	// served is false when the cluster does not serve the kind (its CRD is
	// not installed): reads then say so.
	served   bool
	informer ctrlcache.Informer
	synced   func() bool

	// mu guards entries, list, the object field of every entry and seen.
	mu      sync.RWMutex
	entries map[types.NamespacedName]*viewEntry
	list    []byte // nil: to be rebuilt
	// seen is the highest resourceVersion put or removed (ListVersion).
	seen int64
}

type viewEntry struct {
	object []byte
	// statusStart and statusEnd bound the status in object (0, 0: none).
	statusStart, statusEnd int32
	resourceVersion        string
}

// statusOf is the entry's status as JSON ({} when it has none).
func (e viewEntry) statusOf() []byte {
	if e.statusEnd == 0 {
		return []byte("{}")
	}
	return e.object[e.statusStart:e.statusEnd:e.statusEnd]
}

// viewObject is what a view's informer caches in place of a resource: the
// metadata client-go reads of it (its key and resourceVersion) and its
// encoding.
type viewObject struct {
	name, namespace string
	entry           *viewEntry
}

var _ runtime.Object = (*viewObject)(nil)

func (o *viewObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetObjectMeta is what client-go reads (meta.Accessor): name, namespace
// and resourceVersion.
func (o *viewObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: o.name, Namespace: o.namespace, ResourceVersion: o.entry.resourceVersion}
}

// DeepCopyObject copies the metadata; the entry is shared (its encoding
// never changes, only where it is kept).
func (o *viewObject) DeepCopyObject() runtime.Object {
	c := *o
	return &c
}

// encodeView is the views' cache transform: the object encoded. It must be
// idempotent: what it returns may come back to it.
func encodeView(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	e, err := encodeEntry(u)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	e.resourceVersion = strings.Clone(u.GetResourceVersion())
	return &viewObject{name: strings.Clone(u.GetName()), namespace: strings.Clone(u.GetNamespace()), entry: &e}, nil
}

func newView(kind domain.ResourceKind, gvk schema.GroupVersionKind, gr schema.GroupResource) *view {
	return &view{kind: kind, gvk: gvk, gr: gr, entries: map[types.NamespacedName]*viewEntry{}}
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
	v.informer, v.synced, v.served = informer, reg.HasSynced, true
	return nil
}

func (v *view) put(obj any) {
	o, ok := obj.(*viewObject)
	if !ok {
		return
	}
	v.mu.Lock()
	v.entries[types.NamespacedName{Namespace: o.namespace, Name: o.name}] = o.entry
	v.changed(o)
	v.mu.Unlock()
}

// changed records a put or remove of o; v.mu held.
func (v *view) changed(o *viewObject) {
	v.list = nil
	if rv, err := strconv.ParseInt(o.entry.resourceVersion, 10, 64); err == nil && rv > v.seen {
		v.seen = rv
	}
}

func (v *view) remove(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(*viewObject)
	if !ok {
		return
	}
	v.mu.Lock()
	delete(v.entries, types.NamespacedName{Namespace: o.namespace, Name: o.name})
	v.changed(o)
	v.mu.Unlock()
}

// encodeEntry encodes u as stored minus metadata.managedFields (bookkeeping
// of server-side apply, large and of no use to a reader), and its status
// alone ({} when it has none). u is not changed.
func encodeEntry(u *unstructured.Unstructured) (viewEntry, error) {
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
		return viewEntry{}, err
	}
	e := viewEntry{object: object}
	if st, ok := obj["status"].(map[string]any); ok {
		// The encoding of a map is its keys sorted, each value encoded as
		// it would be alone: the status is the slice after "status":.
		status, err := json.Marshal(st)
		if err != nil {
			return viewEntry{}, err
		}
		if i := bytes.Index(object, append([]byte(`"status":`), status...)); i >= 0 {
			start := i + len(`"status":`)
			e.statusStart, e.statusEnd = int32(start), int32(start+len(status))
		} else {
			return viewEntry{}, fmt.Errorf("the status is not where its encoding says")
		}
	}
	return e, nil
}

func (v *view) ready() error {
	switch {
	case !v.served:
		return domain.Unavailable("cluster: the %s resource (%s) was not served when the server started; apply deploy/crds, then restart the server", v.kind, v.gr)
	case v.synced == nil || !v.synced():
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
		keys := make([]types.NamespacedName, 0, len(v.entries))
		size := 2
		for k, e := range v.entries {
			keys = append(keys, k)
			size += len(e.object) + 1
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
			e := v.entries[k]
			start := len(list)
			list = append(list, e.object...)
			// The entry's encoding is now kept in the list only.
			e.object = list[start:len(list):len(list)]
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
	return strconv.FormatInt(v.seen, 10) + "." + strconv.Itoa(len(v.entries)), nil
}

func (v *view) entry(namespace, name string) (viewEntry, error) {
	if err := v.ready(); err != nil {
		return viewEntry{}, err
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	e, ok := v.entries[types.NamespacedName{Namespace: namespace, Name: name}]
	if !ok {
		return viewEntry{}, domain.NotFound("%s %q does not exist in namespace %q", strings.ToLower(string(v.kind)), name, namespace)
	}
	return *e, nil
}

// names lists the objects' names, sorted.
func (v *view) names() ([]string, error) {
	if err := v.ready(); err != nil {
		return nil, err
	}
	v.mu.RLock()
	out := make([]string, 0, len(v.entries))
	for k := range v.entries {
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
	e, err := v.entry(k.namespace, name)
	return e.object, err
}

// ResourceStatus is one resource's status as JSON ({} when it has none).
func (k *Kube) ResourceStatus(kind domain.ResourceKind, name string) ([]byte, error) {
	v, err := k.view(kind)
	if err != nil {
		return nil, err
	}
	e, err := v.entry(k.namespace, name)
	if err != nil {
		return nil, err
	}
	return e.statusOf(), nil
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
	out["validators.managed"] = k.synced.Load() && k.typedValidators != nil && k.typedValidators.HasSynced()
	out["cronjobs.managed"] = k.synced.Load() && k.cronJobs.synced()
	out["secrets"] = k.synced.Load() && k.secrets.synced()
	for name, v := range map[string]*view{"validators": k.validatorView, "applications": k.applicationView} {
		out[name] = v.ready() == nil
	}
	return out
}
