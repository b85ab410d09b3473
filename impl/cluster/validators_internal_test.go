package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestValidatorIndex: AddIndex files each Validator under its values, once
// each however often values gives one; a change of its spec (its
// generation) refiles it, a change that keeps its generation does not, a
// removal unfiles it, and a value no Validator is filed under any more is
// gone. The values here come from a label, so that a change the index must
// not see can still show.
func TestValidatorIndex(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &ValidatorCache{v: newView(domain.KindValidator, ValidatorGVK, ValidatorResource.GroupResource())}
	c.AddIndex(ctx, func(v *v1alpha1.Validator) []string {
		return strings.Split(v.Labels["refs"], ",")
	})
	object := func(name, refs string, generation int64) *viewObject {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ValidatorGVK)
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetResourceVersion("1")
		u.SetGeneration(generation)
		u.SetLabels(map[string]string{"refs": refs})
		o, err := encodeView(u)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*viewObject)
	}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	type want map[string][]types.NamespacedName
	check := func(step string, w want) {
		t.Helper()
		for value, keys := range w {
			got := c.ByIndex(value)
			slices.SortFunc(got, func(x, y types.NamespacedName) int { return strings.Compare(x.Name, y.Name) })
			if !slices.Equal(got, keys) {
				t.Errorf("%s: ByIndex(%q) = %v, want %v", step, value, got, keys)
			}
		}
	}
	c.v.put(object("a", "shared,a1,a1,a2", 1))
	c.v.put(object("b", "shared,b1", 1))
	check("added", want{"shared": {a, b}, "a1": {a}, "a2": {a}, "b1": {b}, "none": nil})
	c.v.put(object("a", "a2,a3", 2))
	check("a's spec changed", want{"shared": {b}, "a1": nil, "a2": {a}, "a3": {a}, "b1": {b}})
	c.v.put(object("a", "a3,a2", 3))
	check("a's spec changed, not what it reads", want{"shared": {b}, "a2": {a}, "a3": {a}, "b1": {b}})
	c.v.put(object("a", "a4", 3))
	check("a changed, not its spec", want{"a2": {a}, "a3": {a}, "a4": nil})
	c.v.remove(object("b", "shared,b1", 1))
	check("b removed", want{"shared": nil, "b1": nil, "a2": {a}, "a3": {a}})
	c.indexMu.RLock()
	defer c.indexMu.RUnlock()
	if len(c.index) != 2 || len(c.filed) != 1 {
		t.Errorf("left behind: index %v, filed %v", c.index, c.filed)
	}
}
