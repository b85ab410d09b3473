package workload

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// TestAppliedKindsAgree: of every kind the controller applies and prunes
// (pruned), an apply configuration is made (cluster.ApplyConfiguration), and the
// Manager's cache keeps the digest of FieldOwner's apply entry
// (cluster.CacheOptions), in chart mode in every release namespace too
// (cluster.ReleaseCache), so that upToDate can see a kind is in step. The
// kinds are listed in both packages; a ConfigMap missing from the cache's
// list once made every resync and every restart apply every ConfigMap
// again.
func TestAppliedKindsAgree(t *testing.T) {
	const ns = "vm"
	scheme, err := cluster.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	o := cluster.CacheOptions(ns, 0)
	if err := cluster.ReleaseCache(&o, ns); err != nil {
		t.Fatal(err)
	}
	cached := map[string]ctrlcache.ByObject{}
	for obj, by := range o.ByObject {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			t.Fatal(err)
		}
		cached[gvk.Kind] = by
	}
	for _, kind := range pruned {
		t.Run(kind.kind, func(t *testing.T) {
			gvk, err := apiutil.GVKForObject(kind.list(), scheme)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(gvk.Kind, "List"); got != kind.kind {
				t.Fatalf("kind %s lists %s", kind.kind, gvk.Kind)
			}
			gvk.Kind = kind.kind
			typed, err := scheme.New(gvk)
			if err != nil {
				t.Fatal(err)
			}
			obj := typed.(client.Object)
			if _, err := cluster.ApplyConfiguration(obj); err != nil {
				t.Errorf("no apply configuration: %v", err)
			}
			by, ok := cached[kind.kind]
			if !ok {
				t.Fatal("the cache has no options for the kind: its transform keeps no apply entry")
			}
			for _, in := range []string{ns, ctrlcache.AllNamespaces} {
				c, ok := by.Namespaces[in]
				if !ok || c.Transform == nil {
					t.Errorf("no transform in namespace %q", in)
					continue
				}
				fields := []byte(`{"f:metadata":{"f:labels":{}}}`)
				obj.SetManagedFields([]metav1.ManagedFieldsEntry{
					{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{}`)}},
					{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fields}},
				})
				got, err := c.Transform(obj.DeepCopyObject())
				if err != nil {
					t.Fatal(err)
				}
				if owned, want := cluster.OwnedFields(got.(client.Object)), cluster.Digest(fields); owned != want {
					t.Errorf("in namespace %q the cache keeps %q of the apply entry, want its digest %q", in, owned, want)
				}
			}
		})
	}
}
