package simcluster

import (
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	_ "github.com/mattn/go-sqlite3" // the embedded cluster's object store
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

// tracker is the object store behind the embedded cluster's fake clientsets:
// a client-go testing.ObjectTracker (what the fakes' reactors call) that also
// does what an API server and etcd do and client-go's own tracker does not:
// it assigns uid, creationTimestamp and a cluster-wide resourceVersion,
// refuses an update carrying a stale resourceVersion (409, so conflict
// retries work), keeps status apart from the rest of a custom resource
// (status subresource), resumes watches from a resourceVersion, and writes
// every change to one row of a SQLite table before it becomes visible.
// Writes cost one row, whatever the number of objects. The objects live in
// SQLite only (as in etcd), not in memory: a read decodes its rows, under
// mu, so that it sees each change whole and watches miss none. The
// informers over the fakes keep what the gateway reads.
type tracker struct {
	scheme *runtime.Scheme
	db     *sql.DB // writes, one connection
	// reads serves reads, in parallel, and the snapshots that watches
	// stream their initial events from.
	reads *sql.DB
	now   func() time.Time
	// kinds is the kind stored under each resource the scheme knows (for
	// the bookmark that ends a watch's initial events).
	kinds map[schema.GroupVersionResource]schema.GroupVersionKind

	mu     sync.RWMutex
	rv     int64                          // the last resourceVersion handed out
	lastRV map[schema.GroupResource]int64 // last change per resource, deletes included
	// lastManaged is lastRV counting only objects labelled managed-by
	// validator-manager: the last change the gateway's filtered informers see.
	lastManaged map[schema.GroupResource]int64
	watchers    map[*trackerWatcher]struct{}
	history     []change // the latest changes, oldest first, for watches that resume
}

// historySize bounds the changes kept for watches that resume from a
// resourceVersion; an older one gets 410 Gone and the informer relists.
const historySize = 1024

type trackerEvent struct {
	rv  int64
	gr  schema.GroupResource
	typ watch.EventType
	obj runtime.Object
	// owned: obj was decoded for this one watcher (no copy needed).
	owned bool
}

// change is one entry of the history: which object changed how. It holds
// no object (objects can be megabytes), except the metadata of a deleted one.
type change struct {
	rv      int64
	gr      schema.GroupResource
	key     types.NamespacedName
	typ     watch.EventType
	deleted runtime.Object // metadata only
}

var (
	_ clienttesting.ObjectTracker = (*tracker)(nil)
)

const trackerSchema = `
CREATE TABLE IF NOT EXISTS objects (
	api_group        TEXT    NOT NULL,
	resource         TEXT    NOT NULL,
	namespace        TEXT    NOT NULL,
	name             TEXT    NOT NULL,
	version          TEXT    NOT NULL,
	kind             TEXT    NOT NULL,
	resource_version INTEGER NOT NULL,
	object           BLOB    NOT NULL,
	PRIMARY KEY (api_group, resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);`

func newTracker(scheme *runtime.Scheme, now func() time.Time) *tracker {
	kinds := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		kinds[gvr] = gvk
	}
	return &tracker{
		scheme:      scheme,
		now:         now,
		kinds:       kinds,
		lastRV:      map[schema.GroupResource]int64{},
		lastManaged: map[schema.GroupResource]int64{},
		watchers:    map[*trackerWatcher]struct{}{},
	}
}

// load opens the store in db (creating its tables; reads: the same
// database, for reads) and reads where the resourceVersions are; it reports
// whether the store was new (never initialised). Objects are read when asked
// for.
func (t *tracker) load(db, reads *sql.DB) (fresh bool, err error) {
	if _, err := db.Exec(trackerSchema); err != nil {
		return false, err
	}
	var v string
	err = db.QueryRow(`SELECT value FROM meta WHERE key = 'initialized'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		fresh = true
	} else if err != nil {
		return false, err
	}
	rows, err := db.Query(`SELECT api_group, resource, MAX(resource_version) FROM objects GROUP BY api_group, resource`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			gr schema.GroupResource
			rv int64
		)
		if err := rows.Scan(&gr.Group, &gr.Resource, &rv); err != nil {
			return false, err
		}
		t.rv = max(t.rv, rv)
		t.lastRV[gr] = rv
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	t.db, t.reads = db, reads
	return fresh, nil
}

// initialized records that a new store got its initial objects.
func (t *tracker) initialized() error {
	_, err := t.db.Exec(`INSERT INTO meta (key, value) VALUES ('initialized', ?)`, t.now().UTC().Format(time.RFC3339))
	return err
}

func (t *tracker) decode(gvk schema.GroupVersionKind, data []byte) (runtime.Object, error) {
	obj, err := t.scheme.New(gvk)
	if err != nil {
		obj = &unstructured.Unstructured{}
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// kindOf is the group/version/kind an object is stored under.
func (t *tracker) kindOf(gvr schema.GroupVersionResource, obj runtime.Object) schema.GroupVersionKind {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() != "" {
		return u.GroupVersionKind()
	}
	if gvks, _, err := t.scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0]
	}
	return gvr.GroupVersion().WithKind(gvr.Resource)
}

// read decodes one stored object; nil when there is none. Callers hold t.mu.
func (t *tracker) read(gr schema.GroupResource, key types.NamespacedName) (runtime.Object, error) {
	var (
		version, kind string
		data          []byte
	)
	err := t.reads.QueryRow(`SELECT version, kind, object FROM objects WHERE api_group = ? AND resource = ? AND namespace = ? AND name = ?`,
		gr.Group, gr.Resource, key.Namespace, key.Name).Scan(&version, &kind, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, storageError(err)
	}
	obj, err := t.decode(schema.GroupVersionKind{Group: gr.Group, Version: version, Kind: kind}, data)
	if err != nil {
		return nil, storageError(fmt.Errorf("%s %s: %w", gr, key, err))
	}
	return obj, nil
}

// objectRows are the stored objects of gr in ns (all namespaces when empty)
// after key from (none when empty), in namespace then name order, at most
// limit (0: all).
func objectRows(q interface {
	Query(string, ...any) (*sql.Rows, error)
}, gr schema.GroupResource, ns string, from types.NamespacedName, limit int64) (*sql.Rows, error) {
	query := `SELECT version, kind, namespace, name, object FROM objects WHERE api_group = ? AND resource = ?`
	args := []any{gr.Group, gr.Resource}
	if ns != "" {
		query += ` AND namespace = ?`
		args = append(args, ns)
	}
	if from != (types.NamespacedName{}) {
		query += ` AND (namespace, name) > (?, ?)`
		args = append(args, from.Namespace, from.Name)
	}
	query += ` ORDER BY namespace, name`
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	return q.Query(query, args...)
}

// scanObject decodes the object of the current row of objectRows.
func (t *tracker) scanObject(gr schema.GroupResource, rows *sql.Rows) (runtime.Object, types.NamespacedName, error) {
	var (
		version, kind string
		key           types.NamespacedName
		data          []byte
	)
	if err := rows.Scan(&version, &kind, &key.Namespace, &key.Name, &data); err != nil {
		return nil, key, storageError(err)
	}
	obj, err := t.decode(schema.GroupVersionKind{Group: gr.Group, Version: version, Kind: kind}, data)
	if err != nil {
		return nil, key, storageError(fmt.Errorf("%s %s: %w", gr, key, err))
	}
	return obj, key, nil
}

// persist writes one object's row (obj nil: deletes it). Callers hold t.mu.
func (t *tracker) persist(gvr schema.GroupVersionResource, ns, name string, obj runtime.Object, rv int64) error {
	if obj == nil {
		_, err := t.db.Exec(`DELETE FROM objects WHERE api_group = ? AND resource = ? AND namespace = ? AND name = ?`,
			gvr.Group, gvr.Resource, ns, name)
		return err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	gvk := t.kindOf(gvr, obj)
	_, err = t.db.Exec(`INSERT INTO objects (api_group, resource, namespace, name, version, kind, resource_version, object)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (api_group, resource, namespace, name) DO UPDATE SET
			version = excluded.version, kind = excluded.kind,
			resource_version = excluded.resource_version, object = excluded.object`,
		gvr.Group, gvr.Resource, ns, name, gvk.Version, gvk.Kind, rv, data)
	return err
}

func storageError(err error) error {
	// Like an API server whose etcd write failed.
	return apierrors.NewInternalError(fmt.Errorf("embedded cluster store: %w", err))
}

// Add stores obj as a new object under the resource its kind suggests.
func (t *tracker) Add(obj runtime.Object) error {
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := t.Add(it); err != nil {
				return err
			}
		}
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	gvr, _ := meta.UnsafeGuessKindToResource(t.kindOf(schema.GroupVersionResource{}, obj))
	return t.Create(gvr, obj, m.GetNamespace())
}

// Get returns the object, decoded for the caller.
func (t *tracker) Get(gvr schema.GroupVersionResource, ns, name string, _ ...metav1.GetOptions) (runtime.Object, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	obj, err := t.read(gvr.GroupResource(), types.NamespacedName{Namespace: ns, Name: name})
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return obj, nil
}

// List returns the objects of gvr in ns (all namespaces when empty), sorted
// by namespace and name; the clients filter by label. A limit pages the
// list as an API server does; a continue token is good until the next
// change (then 410 Gone: the pager lists again in full).
func (t *tracker) List(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string, opts ...metav1.ListOptions) (runtime.Object, error) {
	var o metav1.ListOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	listGVK := gvk
	listGVK.Kind += "List"
	list, err := t.scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	gr := gvr.GroupResource()
	t.mu.RLock()
	defer t.mu.RUnlock()
	var from types.NamespacedName
	if o.Continue != "" {
		rv, key, err := parseContinue(o.Continue)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if rv != t.rv {
			return nil, apierrors.NewResourceExpired("the provided continue parameter is too old: the list has changed since; list again from the start")
		}
		from = key
	}
	limit := o.Limit
	if limit > 0 {
		limit++ // one more tells whether there is a next page
	}
	rows, err := objectRows(t.reads, gr, ns, from, limit)
	if err != nil {
		return nil, storageError(err)
	}
	defer rows.Close()
	var (
		items []runtime.Object
		last  types.NamespacedName
		more  bool
	)
	for rows.Next() {
		if o.Limit > 0 && int64(len(items)) == o.Limit {
			more = true
			break
		}
		obj, key, err := t.scanObject(gr, rows)
		if err != nil {
			return nil, err
		}
		items, last = append(items, obj), key
	}
	if err := rows.Err(); err != nil {
		return nil, storageError(err)
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	if lm, err := meta.ListAccessor(list); err == nil {
		lm.SetResourceVersion(strconv.FormatInt(t.rv, 10))
		if more {
			lm.SetContinue(continueToken(t.rv, last))
		}
	}
	return list, nil
}

// continueToken resumes a list after key, if nothing changed since rv.
func continueToken(rv int64, key types.NamespacedName) string {
	raw, _ := json.Marshal([]any{rv, key.Namespace, key.Name})
	return base64.RawURLEncoding.EncodeToString(raw)
}

func parseContinue(token string) (int64, types.NamespacedName, error) {
	var (
		raw []byte
		v   []json.RawMessage
		rv  int64
		key types.NamespacedName
	)
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err == nil && len(v) != 3 {
		err = errors.New("wrong length")
	}
	if err == nil {
		err = errors.Join(json.Unmarshal(v[0], &rv), json.Unmarshal(v[1], &key.Namespace), json.Unmarshal(v[2], &key.Name))
	}
	if err != nil {
		return 0, key, fmt.Errorf("invalid continue token: %w", err)
	}
	return rv, key, nil
}

// Create stores a new object, stamped as an API server stamps it.
func (t *tracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.CreateOptions) error {
	_, err := t.create(gvr, obj, ns)
	return err
}

// create is Create; it returns (a copy of) what it stored.
func (t *tracker) create(gvr schema.GroupVersionResource, obj runtime.Object, ns string) (runtime.Object, error) {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if err := checkNamespace(m, ns); err != nil {
		return nil, err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
	}
	gr := gvr.GroupResource()
	if m.GetName() == "" {
		return nil, apierrors.NewBadRequest("name or generateName is required")
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	key := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
	var one int
	switch err := t.reads.QueryRow(`SELECT 1 FROM objects WHERE api_group = ? AND resource = ? AND namespace = ? AND name = ?`,
		gr.Group, gr.Resource, key.Namespace, key.Name).Scan(&one); {
	case err == nil:
		return nil, apierrors.NewAlreadyExists(gr, m.GetName())
	case !errors.Is(err, sql.ErrNoRows):
		return nil, storageError(err)
	}
	rv := t.rv + 1
	m.SetUID(types.UID(uuid.NewString()))
	m.SetCreationTimestamp(metav1.NewTime(t.now().UTC().Truncate(time.Second)))
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	if _, isCustom := obj.(*unstructured.Unstructured); isCustom {
		m.SetGeneration(1)
	}
	if err := t.persist(gvr, key.Namespace, key.Name, obj, rv); err != nil {
		return nil, storageError(err)
	}
	t.commit(gr, key, obj, rv, watch.Added)
	return obj.DeepCopyObject(), nil
}

// Update replaces an object (the whole of it; see update for the status
// subresource).
func (t *tracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.UpdateOptions) error {
	_, err := t.update(gvr, obj, ns, "")
	return err
}

// Patch stores the patched object the reactor computed from the current one.
func (t *tracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, _ ...metav1.PatchOptions) error {
	_, err := t.update(gvr, obj, ns, "")
	return err
}

// Apply (server-side apply) is not served by the embedded cluster; the
// gateway does not use it.
func (t *tracker) Apply(gvr schema.GroupVersionResource, _ runtime.Object, _ string, _ ...metav1.PatchOptions) error {
	return apierrors.NewMethodNotSupported(gvr.GroupResource(), "apply")
}

// update stores obj over the existing object and returns (a copy of) what
// it stored. Custom resources have a status subresource: subresource
// "status" changes status only, the main resource everything but status. A
// non-empty resourceVersion must be the current one.
func (t *tracker) update(gvr schema.GroupVersionResource, obj runtime.Object, ns, subresource string) (runtime.Object, error) {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if err := checkNamespace(m, ns); err != nil {
		return nil, err
	}
	gr := gvr.GroupResource()
	t.mu.Lock()
	defer t.mu.Unlock()
	key := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
	cur, err := t.read(gr, key)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, apierrors.NewNotFound(gr, m.GetName())
	}
	cm, _ := meta.Accessor(cur)
	if v := m.GetResourceVersion(); v != "" && v != cm.GetResourceVersion() {
		return nil, apierrors.NewConflict(gr, m.GetName(), errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if u, isCustom := obj.(*unstructured.Unstructured); isCustom {
		cu, _ := cur.(*unstructured.Unstructured)
		if cu == nil {
			return nil, apierrors.NewBadRequest("object kind does not match the stored object")
		}
		if subresource == "status" {
			next := cu // decoded for this update: not shared
			if status, found := u.Object["status"]; found {
				next.Object["status"] = status
			} else {
				delete(next.Object, "status")
			}
			obj, m, u = next, next, next
		} else {
			if status, found := cu.Object["status"]; found {
				u.Object["status"] = status // cu was decoded for this update
			} else {
				delete(u.Object, "status")
			}
			gen := cu.GetGeneration()
			if !equalJSON(cu.Object["spec"], u.Object["spec"]) {
				gen++
			}
			u.SetGeneration(gen)
		}
	}
	rv := t.rv + 1
	m.SetUID(cm.GetUID())
	m.SetCreationTimestamp(cm.GetCreationTimestamp())
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	if err := t.persist(gvr, key.Namespace, key.Name, obj, rv); err != nil {
		return nil, storageError(err)
	}
	t.commit(gr, key, obj, rv, watch.Modified)
	return obj.DeepCopyObject(), nil
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Delete removes an object; NotFound when absent, as on an API server.
func (t *tracker) Delete(gvr schema.GroupVersionResource, ns, name string, _ ...metav1.DeleteOptions) error {
	gr := gvr.GroupResource()
	t.mu.Lock()
	defer t.mu.Unlock()
	key := types.NamespacedName{Namespace: ns, Name: name}
	last, err := t.read(gr, key)
	if err != nil {
		return err
	}
	if last == nil {
		return apierrors.NewNotFound(gr, name)
	}
	rv := t.rv + 1
	if err := t.persist(gvr, ns, name, nil, rv); err != nil {
		return storageError(err)
	}
	// The delete event carries the object at the deletion's resourceVersion.
	if m, err := meta.Accessor(last); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rv, 10))
	}
	t.commit(gr, key, last, rv, watch.Deleted)
	return nil
}

func checkNamespace(m metav1.Object, ns string) error {
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	if m.GetNamespace() != ns {
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace of the request (%s)", m.GetNamespace(), ns))
	}
	return nil
}

// commit makes a persisted change visible and tells the watchers. Callers
// hold t.mu.
func (t *tracker) commit(gr schema.GroupResource, key types.NamespacedName, obj runtime.Object, rv int64, typ watch.EventType) {
	t.rv = rv
	t.lastRV[gr] = rv
	if m, err := meta.Accessor(obj); err == nil && m.GetLabels()[cluster.ManagedByLabel] == cluster.ManagedBy {
		t.lastManaged[gr] = rv
	}
	ev := trackerEvent{rv: rv, gr: gr, typ: typ, obj: obj}
	c := change{rv: rv, gr: gr, key: key, typ: typ}
	if typ == watch.Deleted {
		c.deleted = t.skeleton(obj)
	}
	if len(t.history) == historySize {
		copy(t.history, t.history[1:])
		t.history = t.history[:historySize-1]
	}
	t.history = append(t.history, c)
	for w := range t.watchers {
		if !w.send(ev) {
			delete(t.watchers, w)
		}
	}
}

// lastChange is the resourceVersion of the latest change to a resource.
func (t *tracker) lastChange(gr schema.GroupResource) int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.lastRV[gr]
}

// lastManagedChange is the resourceVersion of the latest change to an
// object of the resource labelled managed-by validator-manager.
func (t *tracker) lastManagedChange(gr schema.GroupResource) int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.lastManaged[gr]
}

// Watch streams changes of gvr in ns (all namespaces when empty) that match
// the label selector, as an API server does: from the given resourceVersion
// on; or, without one (or with sendInitialEvents), every existing object
// first, then (sendInitialEvents) a bookmark that says the initial events
// are complete (the watch-list of client-go's informers). Initial events
// are decoded one at a time from a snapshot of the store, as the watcher
// takes them, so that a watch of 100,000 objects never holds them all.
func (t *tracker) Watch(gvr schema.GroupVersionResource, ns string, opts ...metav1.ListOptions) (watch.Interface, error) {
	var o metav1.ListOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	sel := labels.Everything()
	if o.LabelSelector != "" {
		s, err := labels.Parse(o.LabelSelector)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		sel = s
	}
	initial := o.ResourceVersion == "" || o.ResourceVersion == "0"
	if o.SendInitialEvents != nil {
		initial = *o.SendInitialEvents
	}
	sendBookmark := o.SendInitialEvents != nil && *o.SendInitialEvents
	gr := gvr.GroupResource()
	var bookmark runtime.Object
	if sendBookmark {
		gvk, ok := t.kinds[gvr]
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("sendInitialEvents is not served for %s", gvr))
		}
		obj, err := t.scheme.New(gvk)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("sendInitialEvents is not served for %s: %v", gvr, err))
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetGroupVersionKind(gvk)
		}
		bookmark = obj
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := &trackerWatcher{t: t, gr: gr, ns: ns, sel: sel, done: make(chan struct{})}
	switch {
	case initial:
		// The snapshot: a read transaction that starts (reads) while no
		// change can be made, then streams after the lock is released.
		tx, err := t.reads.Begin()
		if err != nil {
			return nil, storageError(err)
		}
		var n int
		if err := tx.QueryRow(`SELECT COUNT(*) FROM meta`).Scan(&n); err != nil {
			_ = tx.Rollback()
			return nil, storageError(err)
		}
		if bookmark != nil {
			m, _ := meta.Accessor(bookmark)
			m.SetResourceVersion(strconv.FormatInt(t.rv, 10))
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		w.ch = make(chan watch.Event, watchBuffer)
		w.streaming = true
		go w.stream(tx, bookmark)
	case o.ResourceVersion == "" || o.ResourceVersion == "0":
		w.ch = make(chan watch.Event, watchBuffer) // from now on
	default:
		from, err := strconv.ParseInt(o.ResourceVersion, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", o.ResourceVersion))
		}
		var backlog []trackerEvent
		if from < t.rv {
			if len(t.history) == 0 || t.history[0].rv > from+1 {
				return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, t.rv))
			}
			if backlog, err = t.replay(gr, from); err != nil {
				return nil, err
			}
		}
		w.ch = make(chan watch.Event, len(backlog)+watchBuffer)
		for _, ev := range backlog {
			w.send(ev)
		}
	}
	t.watchers[w] = struct{}{}
	return w, nil
}

// replay is what a watch from resourceVersion from missed, one event per
// object, with the object as it is now (informers are level-based: the
// latest state is what they need). Callers hold t.mu.
func (t *tracker) replay(gr schema.GroupResource, from int64) ([]trackerEvent, error) {
	first := map[types.NamespacedName]int{} // index into out
	var out []trackerEvent
	var keys []types.NamespacedName // of out
	for _, c := range t.history {
		if c.rv <= from || c.gr != gr {
			continue
		}
		ev := trackerEvent{rv: c.rv, gr: gr, typ: c.typ, obj: c.deleted}
		i, seen := first[c.key]
		if !seen {
			first[c.key] = len(out)
			out = append(out, ev)
			keys = append(keys, c.key)
			continue
		}
		if out[i].typ == watch.Added && c.typ != watch.Deleted {
			ev.typ = watch.Added // still new to the watcher
		}
		out[i] = ev
	}
	for i, ev := range out {
		if ev.typ == watch.Deleted {
			continue
		}
		obj, err := t.read(gr, keys[i])
		if err != nil {
			return nil, err
		}
		out[i].obj, out[i].owned = obj, true
	}
	return out, nil
}

// skeleton is obj's kind and metadata: what a delete event needs.
func (t *tracker) skeleton(obj runtime.Object) runtime.Object {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
			"metadata": runtime.DeepCopyJSONValue(u.Object["metadata"]),
		}}
	}
	src, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	gvks, _, err := t.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return obj
	}
	out, err := t.scheme.New(gvks[0])
	if err != nil {
		return obj
	}
	dst, err := meta.Accessor(out)
	if err != nil {
		return obj
	}
	dst.SetName(src.GetName())
	dst.SetNamespace(src.GetNamespace())
	dst.SetUID(src.GetUID())
	dst.SetResourceVersion(src.GetResourceVersion())
	dst.SetLabels(src.GetLabels())
	dst.SetAnnotations(src.GetAnnotations())
	dst.SetOwnerReferences(src.GetOwnerReferences())
	return out
}

// watchBuffer is how many changes a watcher may fall behind; beyond that
// its watch ends (the informer watches again from its last resourceVersion),
// as an API server ends the watch of a client too slow to keep up.
const watchBuffer = 4096

type trackerWatcher struct {
	t   *tracker
	gr  schema.GroupResource
	ns  string
	sel labels.Selector

	mu      sync.Mutex
	ch      chan watch.Event
	stopped bool
	done    chan struct{} // closed when the watch ends
	// streaming: the initial events are being sent (by stream, which then
	// owns ch and closes it); changes wait in pending meanwhile.
	streaming bool
	pending   []watch.Event
}

// matches tells whether ev is for this watcher.
func (w *trackerWatcher) matches(gr schema.GroupResource, obj runtime.Object) bool {
	if gr != w.gr {
		return false
	}
	m, err := meta.Accessor(obj)
	return err == nil && (w.ns == "" || m.GetNamespace() == w.ns) && w.sel.Matches(labels.Set(m.GetLabels()))
}

// send delivers ev when it matches; false when the watcher is done.
func (w *trackerWatcher) send(ev trackerEvent) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	if !w.matches(ev.gr, ev.obj) {
		return true
	}
	obj := ev.obj
	if !ev.owned {
		obj = obj.DeepCopyObject()
	}
	if w.streaming {
		if len(w.pending) == watchBuffer {
			w.end()
			return false
		}
		w.pending = append(w.pending, watch.Event{Type: ev.typ, Object: obj})
		return true
	}
	select {
	case w.ch <- watch.Event{Type: ev.typ, Object: obj}:
		return true
	default:
		w.end()
		return false
	}
}

// end ends the watch; callers hold w.mu.
func (w *trackerWatcher) end() {
	w.stopped = true
	close(w.done)
	if !w.streaming {
		close(w.ch)
	}
}

// stream sends the initial events from the snapshot tx, then bookmark
// (unless nil), then the changes made meanwhile, and hands the watch over
// to send.
func (w *trackerWatcher) stream(tx *sql.Tx, bookmark runtime.Object) {
	defer func() { _ = tx.Rollback() }()
	emit := func(ev watch.Event) bool {
		select {
		case w.ch <- ev:
			return true
		case <-w.done:
			return false
		}
	}
	live := w.initial(tx, bookmark, emit)
	for {
		w.mu.Lock()
		if !live || w.stopped || len(w.pending) == 0 {
			break // holding w.mu: no change can slip in before streaming ends
		}
		pending := w.pending
		w.pending = nil
		w.mu.Unlock()
		for _, ev := range pending {
			if !emit(ev) {
				live = false
				break
			}
		}
	}
	w.streaming = false
	switch {
	case w.stopped:
		close(w.ch)
	case !live: // an error was the last event
		w.end()
	}
	w.mu.Unlock()
}

// initial sends the initial events and the bookmark; false when the watch
// is to end (stopped, or an error sent).
func (w *trackerWatcher) initial(tx *sql.Tx, bookmark runtime.Object, emit func(watch.Event) bool) bool {
	fail := func(err error) bool {
		var status *apierrors.StatusError
		if !errors.As(err, &status) {
			status = apierrors.NewInternalError(err)
		}
		emit(watch.Event{Type: watch.Error, Object: &status.ErrStatus})
		return false
	}
	rows, err := objectRows(tx, w.gr, w.ns, types.NamespacedName{}, 0)
	if err != nil {
		return fail(storageError(err))
	}
	defer rows.Close()
	for rows.Next() {
		obj, _, err := w.t.scanObject(w.gr, rows)
		if err != nil {
			return fail(err)
		}
		if w.matches(w.gr, obj) && !emit(watch.Event{Type: watch.Added, Object: obj}) {
			return false
		}
	}
	if err := rows.Err(); err != nil {
		return fail(storageError(err))
	}
	return bookmark == nil || emit(watch.Event{Type: watch.Bookmark, Object: bookmark})
}

func (w *trackerWatcher) Stop() {
	w.t.mu.Lock()
	delete(w.t.watchers, w)
	w.t.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.end()
	}
}

func (w *trackerWatcher) ResultChan() <-chan watch.Event { return w.ch }

// reaction is the fake clientsets' reactor over t: client-go's
// ObjectReaction, except that updates keep their subresource (status), and
// creates and updates answer with what they stored (client-go's reads it
// back: one more decode of the row).
func (t *tracker) reaction() clienttesting.ReactionFunc {
	generic := clienttesting.ObjectReaction(t)
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		switch a := action.(type) {
		case clienttesting.UpdateActionImpl:
			got, err := t.update(a.GetResource(), a.GetObject(), a.GetNamespace(), a.GetSubresource())
			return true, got, err
		case clienttesting.CreateActionImpl:
			if a.GetSubresource() == "" {
				got, err := t.create(a.GetResource(), a.GetObject(), a.GetNamespace())
				return true, got, err
			}
		}
		return generic(action)
	}
}

// watchReaction serves the fake clientsets' watches from t.
func (t *tracker) watchReaction() clienttesting.WatchReactionFunc {
	return func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := t.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		return true, w, nil
	}
}
