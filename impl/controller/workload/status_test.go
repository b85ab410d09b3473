package workload_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

func readyDeployment(generation int64) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: generation},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}},
		},
	}
}

func readyStatefulSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r1"},
	}
}

func allReady() workload.Observed {
	return workload.Observed{
		Participant: readyDeployment(1), ValidatorApp: readyDeployment(1),
		WalletUI: readyDeployment(1), ANSUI: readyDeployment(1), Postgres: readyStatefulSet(),
	}
}

func TestStatus(t *testing.T) {
	type conds map[string]metav1.ConditionStatus
	tests := []struct {
		name       string
		edit       func(*v1alpha1.Validator)
		observed   func() workload.Observed
		wantPhase  v1alpha1.Phase
		wantDB     bool
		wantConds  conds
		wantReason map[string]string
	}{
		{"nothing yet", nil, func() workload.Observed { return workload.Observed{} }, v1alpha1.PhasePending, false,
			conds{"ParticipantReady": "False", "ValidatorAppReady": "False", "DatabaseReady": "False", "Ready": "False"},
			map[string]string{"ParticipantReady": workload.ReasonNotFound, "Ready": workload.ReasonWorkloadsNotReady}},
		{"participant only", nil, func() workload.Observed { return workload.Observed{Participant: readyDeployment(1)} }, v1alpha1.PhasePending, false,
			conds{"ParticipantReady": "True", "ValidatorAppReady": "False"}, nil},
		{"apps available, UIs and database not yet", nil, func() workload.Observed {
			return workload.Observed{Participant: readyDeployment(1), ValidatorApp: readyDeployment(1), WalletUI: &appsv1.Deployment{}}
		}, v1alpha1.PhaseRunning, false, conds{"ParticipantReady": "True", "ValidatorAppReady": "True", "DatabaseReady": "False", "Ready": "False"},
			map[string]string{"DatabaseReady": workload.ReasonNotFound}},
		{"everything available", nil, allReady, v1alpha1.PhaseCompleted, true,
			conds{"ParticipantReady": "True", "ValidatorAppReady": "True", "DatabaseReady": "True", "Ready": "True"},
			map[string]string{"Ready": workload.ReasonWorkloadsReady, "DatabaseReady": workload.ReasonAvailable}},
		{"rollout of an edit in progress", nil, func() workload.Observed {
			o := allReady()
			o.ValidatorApp.Generation = 2 // not observed yet
			return o
		}, v1alpha1.PhaseRunning, true, conds{"ValidatorAppReady": "True", "Ready": "False"},
			map[string]string{"ValidatorAppReady": workload.ReasonProgressing}},
		{"external database: no StatefulSet to wait for", func(v *v1alpha1.Validator) { v.Spec.ExternalDatabase = true }, func() workload.Observed {
			o := allReady()
			o.Postgres = nil
			return o
		}, v1alpha1.PhaseCompleted, false, conds{"DatabaseReady": "True", "Ready": "True"},
			map[string]string{"DatabaseReady": workload.ReasonExternalDatabase}},
		{"wallet disabled: no UI to wait for", func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.DisabledWallet = ptr.To(true) }, func() workload.Observed {
			o := allReady()
			o.WalletUI, o.ANSUI = nil, nil
			return o
		}, v1alpha1.PhaseCompleted, true, conds{"Ready": "True"}, nil},
		{"participant lost availability", nil, func() workload.Observed {
			o := allReady()
			o.Participant.Status.Conditions[0].Status = corev1.ConditionFalse
			o.Participant.Status.AvailableReplicas = 0
			return o
		}, v1alpha1.PhasePending, true, conds{"ParticipantReady": "False", "Ready": "False"},
			map[string]string{"ParticipantReady": workload.ReasonUnavailable}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := sample("v1")
			if tc.edit != nil {
				tc.edit(v)
			}
			st := workload.Status(v, tc.observed())
			if st.Phase != tc.wantPhase || st.DatabaseReady != tc.wantDB || st.ObservedGeneration != v.Generation {
				t.Errorf("got phase %s databaseReady %t observedGeneration %d, want %s %t %d", st.Phase, st.DatabaseReady, st.ObservedGeneration, tc.wantPhase, tc.wantDB, v.Generation)
			}
			for typ, want := range tc.wantConds {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil || c.Status != want || c.Message == "" {
					t.Errorf("condition %s: got %+v, want %s with a message", typ, c, want)
				}
			}
			for typ, want := range tc.wantReason {
				if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || c.Reason != want {
					t.Errorf("condition %s: got %+v, want reason %s", typ, c, want)
				}
			}
		})
	}
}

// A condition whose status does not change keeps its transition time, so
// that writing the same status twice is not a change.
func TestStatusStable(t *testing.T) {
	v := sample("v1")
	v.Status = workload.Status(v, allReady())
	if again := workload.Status(v, allReady()); !meta.IsStatusConditionTrue(again.Conditions, v1alpha1.ConditionReady) ||
		again.Conditions[3].LastTransitionTime != v.Status.Conditions[3].LastTransitionTime {
		t.Errorf("got %+v, want the same conditions as %+v", again.Conditions, v.Status.Conditions)
	}
}
