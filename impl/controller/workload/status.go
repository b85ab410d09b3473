package workload

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// Observed is what the cluster holds of a validator's workloads; nil where
// a workload does not exist (yet).
type Observed struct {
	Participant  *appsv1.Deployment
	ValidatorApp *appsv1.Deployment
	WalletUI     *appsv1.Deployment
	ANSUI        *appsv1.Deployment
	Postgres     *appsv1.StatefulSet
}

// Condition reasons.
const (
	ReasonAvailable         = "Available"
	ReasonNotFound          = "NotFound"
	ReasonProgressing       = "Progressing"
	ReasonUnavailable       = "Unavailable"
	ReasonExternalDatabase  = "ExternalDatabase"
	ReasonWorkloadsReady    = "WorkloadsReady"
	ReasonWorkloadsNotReady = "WorkloadsNotReady"
)

// readiness of one workload.
type readiness struct {
	// available: the workload serves (a Deployment's Available condition, a
	// StatefulSet's ready replicas).
	available bool
	// settled: available, and every replica runs the current generation
	// (no rollout in progress).
	settled bool
	reason  string
	message string
}

func deploymentReadiness(name string, d *appsv1.Deployment) readiness {
	if d == nil {
		return readiness{reason: ReasonNotFound, message: fmt.Sprintf("Deployment %s does not exist yet", name)}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	var available bool
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			available = c.Status == corev1.ConditionTrue
		}
	}
	current := s.ObservedGeneration >= d.Generation
	settled := available && current && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
	switch {
	case !available:
		return readiness{reason: ReasonUnavailable, message: fmt.Sprintf("Deployment %s: %d of %d replicas available", name, s.AvailableReplicas, want)}
	case !settled:
		return readiness{available: true, reason: ReasonProgressing, message: fmt.Sprintf("Deployment %s is available; rollout in progress (%d of %d replicas updated)", name, s.UpdatedReplicas, want)}
	}
	return readiness{available: true, settled: true, reason: ReasonAvailable, message: fmt.Sprintf("Deployment %s: %d of %d replicas available", name, s.AvailableReplicas, want)}
}

func statefulSetReadiness(name string, st *appsv1.StatefulSet) readiness {
	if st == nil {
		return readiness{reason: ReasonNotFound, message: fmt.Sprintf("StatefulSet %s does not exist yet", name)}
	}
	want := int32(1)
	if st.Spec.Replicas != nil {
		want = *st.Spec.Replicas
	}
	s := st.Status
	current := s.ObservedGeneration >= st.Generation
	available := s.ReadyReplicas >= want && want > 0
	settled := available && current && s.UpdatedReplicas == want && (s.UpdateRevision == "" || s.CurrentRevision == s.UpdateRevision)
	switch {
	case !available:
		return readiness{reason: ReasonUnavailable, message: fmt.Sprintf("StatefulSet %s: %d of %d replicas ready", name, s.ReadyReplicas, want)}
	case !settled:
		return readiness{available: true, reason: ReasonProgressing, message: fmt.Sprintf("StatefulSet %s is ready; rollout in progress (%d of %d replicas updated)", name, s.UpdatedReplicas, want)}
	}
	return readiness{available: true, settled: true, reason: ReasonAvailable, message: fmt.Sprintf("StatefulSet %s: %d of %d replicas ready", name, s.ReadyReplicas, want)}
}

// Status is v's status given its workloads: PENDING until the participant
// and the validator app are available, RUNNING from then on, COMPLETED
// while every workload of v is available and rolled out at its current
// generation (an edit that changes a workload moves a COMPLETED validator
// back to RUNNING until its rollout ends). Conditions keep their
// lastTransitionTime when their status does not change.
func Status(v *v1alpha1.Validator, o Observed) v1alpha1.ValidatorStatus {
	st := v1alpha1.ValidatorStatus{
		ObservedGeneration: v.Generation,
		Conditions:         append([]metav1.Condition(nil), v.Status.Conditions...),
	}
	set := func(typ string, r readiness) {
		status := metav1.ConditionFalse
		if r.available {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: r.reason, Message: r.message, ObservedGeneration: v.Generation,
		})
	}
	b := newLayout(v)
	participant := deploymentReadiness(b.name(Participant), o.Participant)
	app := deploymentReadiness(b.name(ValidatorApp), o.ValidatorApp)
	set(v1alpha1.ConditionParticipantReady, participant)
	set(v1alpha1.ConditionValidatorAppReady, app)
	all := []readiness{participant, app}
	if b.walletEnabled() {
		all = append(all, deploymentReadiness(b.name(WalletUI), o.WalletUI), deploymentReadiness(b.name(ANSUI), o.ANSUI))
	}
	var db readiness
	if v.Spec.ExternalDatabase {
		// Nothing of ours to wait for: the external database is the
		// operator's; databaseReady (the internal database runs) stays false.
		db = readiness{available: true, settled: true, reason: ReasonExternalDatabase, message: "the validator uses an external database"}
	} else {
		db = statefulSetReadiness(b.name(Postgres), o.Postgres)
		st.DatabaseReady = db.available
	}
	set(v1alpha1.ConditionDatabaseReady, db)
	all = append(all, db)

	settled := true
	var waiting []string
	for _, r := range all {
		if !r.settled {
			settled = false
			waiting = append(waiting, r.message)
		}
	}
	switch {
	case !participant.available || !app.available:
		st.Phase = v1alpha1.PhasePending
	case settled:
		st.Phase = v1alpha1.PhaseCompleted
	default:
		st.Phase = v1alpha1.PhaseRunning
	}
	ready := readiness{available: settled, reason: ReasonWorkloadsReady, message: "every workload is available at its current generation"}
	if !settled {
		ready.reason, ready.message = ReasonWorkloadsNotReady, strings.Join(waiting, "; ")
	}
	set(v1alpha1.ConditionReady, ready)
	return st
}
