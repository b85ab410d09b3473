package workload

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// The cache's resync of a Validator (same version) reaches the controller;
// a write of someone else's that changes neither generation nor status
// does not.
func TestResyncOfAValidatorIsReconciled(t *testing.T) {
	v := &v1alpha1.Validator{}
	v.ResourceVersion = "7"
	w := v.DeepCopy()
	w.ResourceVersion = "8"
	if !resynced.Update(event.UpdateEvent{ObjectOld: v, ObjectNew: v.DeepCopy()}) {
		t.Error("a resync (same resourceVersion) is dropped")
	}
	if resynced.Update(event.UpdateEvent{ObjectOld: v, ObjectNew: w}) {
		t.Error("a new version is passed by the resync predicate")
	}
}
