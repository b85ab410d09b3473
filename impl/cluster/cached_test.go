package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// cachedBudget bounds what the cache may keep of one validator's objects
// (TestCachedBytesPerValidator), some 10 % above what it keeps: its
// Validator as its encoding (release 2.0's view, from which readers decode
// it) with its metadata, and 20 records (5 Pods, 4 Deployments, a
// StatefulSet, 5 Services, 3 Secrets, 2 claims) of 250–450 bytes. A
// Validator cached typed as well adds some 3.4 KB; a transform
// lost or widened (a Pod's spec back in the cache alone adds 38 KB;
// Deployments, StatefulSets and Services cached as trimmed typed objects
// instead of records, 14 KB) fails it; docs/benchmarks.md has the figures.
// Under the race detector, whose runtime keeps some 9 % more of the same
// objects, the budget is raceCachedBudget.
const cachedBudget, raceCachedBudget = 13_500, 14_800

// TestCachedBytesPerValidator measures, per kind, what the Manager's cache
// keeps of one validator's objects after CacheOptions' transforms: each
// object of testdata/validator-objects.json (a validator of the embedded
// default with its workloads, Pods, claims and Secrets, as its API server
// returned them, managedFields included) is decoded for copies validators
// of other names, as a watch decodes it, and passed through its kind's
// transform; the live heap the results keep, divided by copies, is its
// figure (the informer's store adds its key and index entries, some 200
// bytes an object, not counted). It fails when a cached object keeps what
// no reader reads (managedFields, a pod template or spec, a Secret's
// value) or when a validator's objects keep more than cachedBudget. -v
// prints the table.
func TestCachedBytesPerValidator(t *testing.T) {
	scheme, err := cluster.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "validator-objects.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	// Each copy is the fixture's validator under another name, so that what
	// the transforms share (interned labels and owners) is shared as among
	// one validator's objects, not across validators.
	const ns, copies, name = "default", 100, "node-00000"
	opts := cluster.CacheOptions(ns, 0)
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	type object struct {
		kind      string
		raws      [][]byte
		decode    func([]byte) any
		transform toolscache.TransformFunc
	}
	var objects []object
	for _, item := range list.Items {
		obj, gvk, err := decoder.Decode(item, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, custom := obj.(*unstructured.Unstructured); custom {
			t.Fatalf("%s decoded as unstructured: its kind is not in cluster.Scheme", gvk.Kind)
		}
		raws := make([][]byte, copies)
		for i := range raws {
			raws[i] = bytes.ReplaceAll(item, []byte(name), fmt.Appendf(nil, "node-%05d", i))
		}
		typed := func(raw []byte) any {
			o, _, err := decoder.Decode(raw, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		transform := transformOf(t, opts, scheme, *gvk)
		decode := typed
		if gvk.Group == cluster.Group {
			// The cache's one informer of the kind is unstructured: its
			// objects are kept as their encoding.
			decode = func(raw []byte) any {
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON(raw); err != nil {
					t.Fatal(err)
				}
				return u
			}
		}
		objects = append(objects, object{gvk.Kind, raws, decode, transform})
		cached, err := transform(decode(item))
		if err != nil {
			t.Fatal(err)
		}
		checkTrimmed(t, gvk.Kind, cached)
	}
	type row struct {
		kind  string
		count int
		// as decoded, without managedFields, as cached
		bytes [3]int64
	}
	var rows []row
	for mode, transform := range []func(object) toolscache.TransformFunc{
		func(object) toolscache.TransformFunc { return nil },
		func(object) toolscache.TransformFunc { return ctrlcache.TransformStripManagedFields() },
		func(o object) toolscache.TransformFunc { return o.transform },
	} {
		var keep [][]any // every object of this pass, alive until its end
		for _, o := range objects {
			i := slices.IndexFunc(rows, func(r row) bool { return r.kind == o.kind })
			if i < 0 {
				rows, i = append(rows, row{kind: o.kind}), len(rows)
			}
			if mode == 0 {
				rows[i].count++
			}
			kept, perCopy := heapOf(o.raws, o.decode, transform(o))
			keep = append(keep, kept)
			rows[i].bytes[mode] += perCopy
		}
		goruntime.KeepAlive(keep)
	}
	var total row
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s %5s %12s %20s %10s\n", "kind", "count", "as decoded", "without managedFields", "cached")
	for _, r := range rows {
		fmt.Fprintf(&table, "%-28s %5d %12d %20d %10d\n", r.kind, r.count, r.bytes[0], r.bytes[1], r.bytes[2])
		for m := range total.bytes {
			total.bytes[m] += r.bytes[m]
		}
	}
	fmt.Fprintf(&table, "%-28s %5s %12d %20d %10d\n", "a validator", "", total.bytes[0], total.bytes[1], total.bytes[2])
	t.Logf("bytes of heap per validator, by kind (%d copies of each object):\n%s", copies, table.String())
	budget := int64(cachedBudget)
	if raceBuild {
		budget = raceCachedBudget
	}
	if total.bytes[2] > budget {
		t.Errorf("the cache keeps %d bytes of a validator's objects, want at most %d:\n%s", total.bytes[2], budget, table.String())
	}
}

// transformOf is the transform the Manager's cache applies to objects of
// gvk with opts, as controller-runtime picks it: the ByObject entry of
// that kind (typed or not), else the default.
func transformOf(t *testing.T, opts ctrlcache.Options, scheme *runtime.Scheme, gvk schema.GroupVersionKind) toolscache.TransformFunc {
	t.Helper()
	for obj, by := range opts.ByObject {
		k, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			t.Fatal(err)
		}
		if k != gvk {
			continue
		}
		for _, c := range by.Namespaces {
			if c.Transform != nil {
				return c.Transform
			}
		}
		if by.Transform != nil {
			return by.Transform
		}
	}
	return opts.DefaultTransform
}

// heapOf decodes each of raws with decode, passes it through transform
// (nil: none), and returns the results and the live heap they keep,
// divided by their number.
func heapOf(raws [][]byte, decode func([]byte) any, transform toolscache.TransformFunc) ([]any, int64) {
	keep := make([]any, len(raws))
	before := liveHeap()
	for i, raw := range raws {
		obj := decode(raw)
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				panic(err)
			}
		}
		keep[i] = obj
	}
	after := liveHeap()
	return keep, (int64(after) - int64(before) - int64(len(raws))*16) / int64(len(raws))
}

func liveHeap() uint64 {
	var m goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// checkTrimmed fails when a cached object keeps what its readers never
// read.
func checkTrimmed(t *testing.T, kind string, cached any) {
	t.Helper()
	if m, err := meta.Accessor(cached); err == nil && len(m.GetManagedFields()) > 0 {
		t.Errorf("cached %s %s keeps its managedFields", kind, m.GetName())
	}
	if _, ok := cluster.DecodeValidator(cached); kind == cluster.Kind && !ok {
		t.Errorf("Validator cached as a %T, not as its encoding (which DecodeValidator reads)", cached)
	}
	switch o := cached.(type) {
	case *corev1.Pod:
		t.Errorf("Pod %s cached as a Pod, not as its record (cluster.PodRecord)", o.Name)
	case *cluster.PodRecord:
		if o.Validator == "" || o.Component == "" || len(o.OwnerReferences) > 0 {
			t.Errorf("cached Pod %s: want its validator and component and no other metadata than its key: %+v", o.Name, o)
		}
	case *corev1.PersistentVolumeClaim:
		t.Errorf("claim %s cached as a claim, not as its record (cluster.ClaimRecord)", o.Name)
	case *cluster.ClaimRecord:
		if o.Storage.IsZero() || o.Validator == "" {
			t.Errorf("cached claim %s: want the storage it requests (the workload controller grows it) and its validator: %+v", o.Name, o)
		}
	case *corev1.Service, *appsv1.Deployment, *appsv1.StatefulSet:
		t.Errorf("%s cached as a typed object, not as its record (cluster.WorkloadRecord)", kind)
	case *cluster.WorkloadRecord:
		if len(o.OwnerReferences) != 1 || o.Owned == "" {
			t.Errorf("cached %s %s: owners %v applied %q owned %q; want its key, its controller and the digest of the fields it applied",
				kind, o.Name, o.OwnerReferences, o.Applied, o.Owned)
		}
		if (kind == "StatefulSet") != (len(o.ClaimTemplates) > 0) {
			t.Errorf("cached %s %s: claim templates %v, want a StatefulSet's alone", kind, o.Name, o.ClaimTemplates)
		}
	case *corev1.Secret:
		t.Errorf("Secret %s cached as a Secret, not as its record (cluster.SecretRecord)", o.Name)
	case *cluster.SecretRecord:
		if len(o.Keys) == 0 || o.Validator == "" {
			t.Errorf("cached Secret %s: want the keys of its data and its validator: %+v", o.Name, o)
		}
	}
}
