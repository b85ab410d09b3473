package workload_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/podrefs"
)

// readyDeployment is an available Deployment, rolled out at generation.
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

// readyStatefulSet is a ready StatefulSet.
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

// notReady is o with its participant's Deployment unavailable.
func notReady(o workload.Observed) workload.Observed {
	p := o.Participant.DeepCopy()
	p.Status.Conditions[0].Status, p.Status.AvailableReplicas = corev1.ConditionFalse, 0
	o.Participant = p
	return o
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
			return notReady(allReady())
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

// pod is a pod of component of validator v1 with the given status.
func pod(component string, st corev1.PodStatus) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "v1-" + component + "-abc", Labels: map[string]string{workload.ValidatorLabel: "v1", workload.ComponentLabel: component}},
		Status:     st,
	}
}

func waiting(container, reason, message string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: container, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}
}

// A pod a kubelet could not start (or could not restart) keeps the
// validator PENDING, whatever its Deployments say, and the conditions name
// the cause: the kubelet's (or the scheduler's) reason and message, or the
// Secret the templates read that does not exist.
func TestStatusBlocked(t *testing.T) {
	tests := []struct {
		name     string
		observed workload.Observed
		edit     func(*v1alpha1.Validator)
		// condition type -> reason and message; Ready is checked too.
		cond, reason, message string
		wantPhase             v1alpha1.Phase
		wantDB                bool
	}{
		{"participant waits for its database Secret", notReady(with(allReady(), pod(workload.Participant,
			waiting("participant", "CreateContainerConfigError", `secret "v1-database" not found`)))), nil,
			"ParticipantReady", "CreateContainerConfigError", `Deployment v1-participant: pod v1-participant-abc container participant: secret "v1-database" not found`,
			v1alpha1.PhasePending, true},
		{"a UI's image does not parse, the apps are available", with(allReady(), pod(workload.WalletUI,
			waiting("wallet-web-ui", "InvalidImageName", `Failed to apply default image tag "X": couldn't parse image reference "X": invalid reference format`))), nil,
			"Ready", "InvalidImageName", `Deployment v1-wallet-web-ui: pod v1-wallet-web-ui-abc container wallet-web-ui: Failed to apply default image tag "X"`,
			v1alpha1.PhasePending, true},
		{"database pod unschedulable", func() workload.Observed {
			o := allReady()
			o.Postgres.Status.ReadyReplicas = 0
			return with(o, pod(workload.Postgres, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: `0/1 nodes are available: persistentvolumeclaim "pg-data-v1-postgres-0" not found.`}}}))
		}(), nil, "DatabaseReady", "Unschedulable", `StatefulSet v1-postgres: pod v1-postgres-abc cannot be scheduled: 0/1 nodes are available: persistentvolumeclaim "pg-data-v1-postgres-0" not found.`,
			v1alpha1.PhasePending, false},
		{"running, but the Secret the validator app reads is gone", func() workload.Observed {
			o := allReady()
			o.Missing = map[string][]podrefs.Ref{workload.ValidatorApp: {{Kind: podrefs.Secret, Name: "v1-database"}}}
			return o
		}(), nil, "ValidatorAppReady", workload.ReasonSecretNotFound, `Deployment v1-validator-app: secret "v1-database" not found; its pods cannot start`,
			v1alpha1.PhasePending, true},
		{"a key the participant reads is missing from its Secret", func() workload.Observed {
			o := allReady()
			o.Missing = map[string][]podrefs.Ref{workload.Participant: {{Kind: podrefs.Secret, Name: "v1-database", Keys: []string{"password"}}}}
			return o
		}(), nil, "ParticipantReady", workload.ReasonSecretKeyMissing, `Deployment v1-participant: secret "v1-database" has no key "password"; its pods cannot start`,
			v1alpha1.PhasePending, true},
		{"keys and a Secret missing: the first names the reason, the message all", func() workload.Observed {
			o := allReady()
			o.Missing = map[string][]podrefs.Ref{workload.ValidatorApp: {
				{Kind: podrefs.Secret, Name: "v1-auth", Keys: []string{"client-id", "client-secret"}}, {Kind: podrefs.Secret, Name: "v1-extra"}}}
			return o
		}(), nil, "ValidatorAppReady", workload.ReasonSecretKeyMissing,
			`secret "v1-auth" has no keys "client-id", "client-secret", secret "v1-extra" not found`, v1alpha1.PhasePending, true},
		{"a missing ConfigMap", func() workload.Observed {
			o := allReady()
			o.Missing = map[string][]podrefs.Ref{workload.Participant: {{Kind: podrefs.ConfigMap, Name: "extra"}}}
			return o
		}(), nil, "ParticipantReady", workload.ReasonConfigMapNotFound, `configmap "extra" not found`, v1alpha1.PhasePending, true},
		{"a pod being created is progress, not a failure", notReady(with(allReady(), pod(workload.Participant,
			waiting("participant", "ContainerCreating", "")))), nil, "Ready", workload.ReasonWorkloadsNotReady, "Deployment v1-participant: 0 of 1 replicas available",
			v1alpha1.PhasePending, true},
		{"a terminating pod is not looked at", func() workload.Observed {
			p := pod(workload.Participant, waiting("participant", "CreateContainerConfigError", `secret "old" not found`))
			p.DeletionTimestamp = &metav1.Time{}
			return with(allReady(), p)
		}(), nil, "Ready", workload.ReasonWorkloadsReady, "every workload", v1alpha1.PhaseCompleted, true},
		{"a pod of a disabled UI is not looked at", with(allReady(), pod(workload.ANSUI, waiting("ans-web-ui", "InvalidImageName", "x"))),
			func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.DisabledWallet = ptr.To(true) },
			"Ready", workload.ReasonWorkloadsReady, "every workload", v1alpha1.PhaseCompleted, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := sample("v1")
			if tc.edit != nil {
				tc.edit(v)
			}
			st := workload.Status(v, tc.observed)
			if st.Phase != tc.wantPhase || st.DatabaseReady != tc.wantDB {
				t.Errorf("phase %s databaseReady %t, want %s %t", st.Phase, st.DatabaseReady, tc.wantPhase, tc.wantDB)
			}
			for _, typ := range []string{tc.cond, v1alpha1.ConditionReady} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
					t.Errorf("condition %s: %+v, want reason %s and a message containing %q", typ, c, tc.reason, tc.message)
				}
				if tc.wantPhase == v1alpha1.PhasePending && (c == nil || c.Status != metav1.ConditionFalse) {
					t.Errorf("condition %s: %+v, want False", typ, c)
				}
			}
		})
	}
}

func with(o workload.Observed, pods ...*corev1.Pod) workload.Observed {
	o.Pods = append(o.Pods, pods...)
	return o
}
