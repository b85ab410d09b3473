package intent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// TestReadChanged: a Validator's update reconciles when something the
// controller reads changed, or at a resync; not for conditions alone.
func TestReadChanged(t *testing.T) {
	base := func() *v1alpha1.Validator {
		v := &v1alpha1.Validator{ObjectMeta: metav1.ObjectMeta{Name: "v", ResourceVersion: "1", Generation: 1,
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}}}
		v.Status.Phase = v1alpha1.PhasePending
		return v
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(v *v1alpha1.Validator)
		want   bool
	}{
		{"resync (same version)", func(v *v1alpha1.Validator) {}, true},
		{"conditions only", func(v *v1alpha1.Validator) {
			v.ResourceVersion = "2"
			v.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "WorkloadsNotReady"}}
		}, false},
		{"databaseReady only", func(v *v1alpha1.Validator) { v.ResourceVersion = "2"; v.Status.DatabaseReady = true }, false},
		{"phase", func(v *v1alpha1.Validator) { v.ResourceVersion = "2"; v.Status.Phase = v1alpha1.PhaseRunning }, true},
		{"spec (generation)", func(v *v1alpha1.Validator) { v.ResourceVersion = "2"; v.Generation = 2 }, true},
		{"labels", func(v *v1alpha1.Validator) { v.ResourceVersion = "2"; v.Labels = nil }, true},
		{"annotations", func(v *v1alpha1.Validator) { v.ResourceVersion = "2"; v.Annotations["e"] = "f" }, true},
		{"workloads' namespace (the backup CronJob dials it)", func(v *v1alpha1.Validator) {
			v.ResourceVersion = "2"
			v.Status.Namespace = "release"
		}, true},
		{"deletion", func(v *v1alpha1.Validator) { v.ResourceVersion = "2"; v.DeletionTimestamp = &now }, true},
		{"finalizers (chart Secrets wait for the release's)", func(v *v1alpha1.Validator) {
			v.ResourceVersion = "2"
			v.Finalizers = []string{"validator-manager.io/release-namespace"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			got := readChanged.Update(event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: cur})
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
