package workload

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/podrefs"
)

// Observed is what the cache holds of a validator's workloads (nil where
// one does not exist); shared with the cache: read only.
type Observed struct {
	Participant, ValidatorApp, WalletUI, ANSUI *appsv1.Deployment
	Postgres                                   *appsv1.StatefulSet
	// Pods of the validator, by name.
	Pods []*corev1.Pod
	// Missing: per component, what its pod template reads that is not
	// there; running pods keep running, but none can (re)start.
	Missing map[string][]podrefs.Ref
	// Names of the workloads by component; absent: Name's.
	Names map[string]string
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
	// A pod template reads what does not exist (Observed.Missing).
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	ReasonSecretKeyMissing  = "SecretKeyMissing"
	// A pod that cannot start gives its own reason (StartFailure).
)

// readiness of one workload.
type readiness struct {
	available bool
	// settled: available, and no rollout in progress.
	settled bool
	// blocked: a pod cannot start, or could not if it restarted.
	blocked bool
	reason  string
	message string
}

// blockedBy is r overridden by why component's pods cannot start: what a
// pod reports first (it is what happens), then what is Missing.
func blockedBy(r readiness, workload, component string, o Observed) readiness {
	for _, p := range o.Pods {
		if p.Labels[ComponentLabel] != component || p.DeletionTimestamp != nil {
			continue
		}
		if reason, message := StartFailure(p); reason != "" {
			return readiness{blocked: true, reason: reason, message: fmt.Sprintf("%s: pod %s %s", workload, p.Name, message)}
		}
	}
	missing := o.Missing[component]
	if len(missing) == 0 {
		return r
	}
	var names []string
	for _, m := range missing {
		names = append(names, lacks(m))
	}
	return readiness{blocked: true, reason: missingReason(missing[0]),
		message: fmt.Sprintf("%s: %s; its pods cannot start", workload, strings.Join(names, ", "))}
}

func missingReason(m podrefs.Ref) string {
	switch {
	case m.Kind == podrefs.ConfigMap:
		return ReasonConfigMapNotFound
	case len(m.Keys) > 0:
		return ReasonSecretKeyMissing
	}
	return ReasonSecretNotFound
}

// lacks says what m says is missing (key names, never values).
func lacks(m podrefs.Ref) string {
	object := fmt.Sprintf("%s %q", strings.ToLower(string(m.Kind)), m.Name)
	switch len(m.Keys) {
	case 0:
		return object + " not found"
	case 1:
		return fmt.Sprintf("%s has no key %q", object, m.Keys[0])
	}
	quoted := make([]string, len(m.Keys))
	for i, k := range m.Keys {
		quoted[i] = strconv.Quote(k)
	}
	return fmt.Sprintf("%s has no keys %s", object, strings.Join(quoted, ", "))
}

func deploymentReadiness(name string, d *appsv1.Deployment) readiness {
	if d == nil {
		return readiness{reason: ReasonNotFound, message: fmt.Sprintf("Deployment %s does not exist yet", name)}
	}
	want, s := ptr.Deref(d.Spec.Replicas, 1), d.Status
	available := slices.ContainsFunc(s.Conditions, func(c appsv1.DeploymentCondition) bool {
		return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
	})
	rolledOut := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
	return rollout("Deployment", name, "available", available, rolledOut, s.AvailableReplicas, s.UpdatedReplicas, want)
}

func statefulSetReadiness(name string, st *appsv1.StatefulSet) readiness {
	if st == nil {
		return readiness{reason: ReasonNotFound, message: fmt.Sprintf("StatefulSet %s does not exist yet", name)}
	}
	want, s := ptr.Deref(st.Spec.Replicas, 1), st.Status
	// Every replica runs the update revision.
	revised := s.UpdateRevision == "" || s.CurrentRevision == s.UpdateRevision
	rolledOut := s.ObservedGeneration >= st.Generation && s.UpdatedReplicas == want && revised
	return rollout("StatefulSet", name, "ready", s.ReadyReplicas >= want && want > 0, rolledOut, s.ReadyReplicas, s.UpdatedReplicas, want)
}

// rollout is the readiness of a workload, have of its want replicas
// counted as available or ready.
func rollout(kind, name, counted string, available, rolledOut bool, have, updated, want int32) readiness {
	switch {
	case !available:
		return readiness{reason: ReasonUnavailable, message: fmt.Sprintf("%s %s: %d of %d replicas %s", kind, name, have, want, counted)}
	case !rolledOut:
		return readiness{available: true, reason: ReasonProgressing, message: fmt.Sprintf("%s %s is %s; rollout in progress (%d of %d replicas updated)", kind, name, counted, updated, want)}
	}
	return readiness{available: true, settled: true, reason: ReasonAvailable, message: fmt.Sprintf("%s %s: %d of %d replicas %s", kind, name, have, want, counted)}
}

// Status is v's status given its workloads: PENDING until the participant
// and the validator app are available and while a pod cannot start, then
// RUNNING; COMPLETED while every workload is rolled out at its generation.
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
		setCondition(&st, v, typ, status, r.reason, r.message)
	}
	b := newLayout(v)
	name := func(component string) string { return cmp.Or(o.Names[component], b.name(component)) }
	deployment := func(component string, d *appsv1.Deployment) readiness {
		name := name(component)
		return blockedBy(deploymentReadiness(name, d), "Deployment "+name, component, o)
	}
	participant := deployment(Participant, o.Participant)
	app := deployment(ValidatorApp, o.ValidatorApp)
	set(v1alpha1.ConditionParticipantReady, participant)
	set(v1alpha1.ConditionValidatorAppReady, app)
	all := []readiness{participant, app}
	if WalletEnabled(v) {
		all = append(all, deployment(WalletUI, o.WalletUI), deployment(ANSUI, o.ANSUI))
	}
	var db readiness
	if v.Spec.ExternalDatabase {
		// The operator's; databaseReady stays false.
		db = readiness{available: true, settled: true, reason: ReasonExternalDatabase, message: "the validator uses an external database"}
	} else {
		name := name(Postgres)
		db = blockedBy(statefulSetReadiness(name, o.Postgres), "StatefulSet "+name, Postgres, o)
		st.DatabaseReady = db.available
	}
	set(v1alpha1.ConditionDatabaseReady, db)
	all = append(all, db)

	var waiting []string
	var blocked *readiness
	for i, r := range all {
		if !r.settled {
			waiting = append(waiting, r.message)
		}
		if r.blocked && blocked == nil {
			blocked = &all[i]
		}
	}
	settled := len(waiting) == 0
	switch {
	case !participant.available || !app.available || blocked != nil:
		st.Phase = v1alpha1.PhasePending
	case settled:
		st.Phase = v1alpha1.PhaseCompleted
	default:
		st.Phase = v1alpha1.PhaseRunning
	}
	ready := readiness{available: settled, reason: ReasonWorkloadsReady, message: "every workload is available at its current generation"}
	switch {
	case blocked != nil: // the first cause a pod cannot start names it
		ready.reason, ready.message = blocked.reason, strings.Join(waiting, "; ")
	case !settled:
		ready.reason, ready.message = ReasonWorkloadsNotReady, strings.Join(waiting, "; ")
	}
	set(v1alpha1.ConditionReady, ready)
	return st
}

// startFailures are the kubelet's waiting reasons of a failed start
// (ContainerCreating and PodInitializing are progress).
var startFailures = map[string]bool{
	"CreateContainerConfigError": true, "CreateContainerError": true, "InvalidImageName": true,
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true,
	"CrashLoopBackOff": true, "RunContainerError": true, "PreStartHookError": true, "PostStartHookError": true,
}

// StartFailure is why a Pod cannot start: the scheduler's reason, or its
// first container's start failure; "", "" when none.
func StartFailure(p *corev1.Pod) (reason, message string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Reason, "cannot be scheduled: " + c.Message
		}
	}
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && startFailures[w.Reason] {
			return w.Reason, fmt.Sprintf("container %s: %s", cs.Name, w.Message)
		}
	}
	return "", ""
}
