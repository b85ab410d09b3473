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

// Observed is what the cluster holds of a validator's workloads, as the
// cache keeps them; nil where a workload does not exist (yet). Shared with
// the cache: read only.
type Observed struct {
	// Participant, ValidatorApp, WalletUI and ANSUI are Deployments,
	// Postgres a StatefulSet.
	Participant, ValidatorApp, WalletUI, ANSUI *appsv1.Deployment
	Postgres                                   *appsv1.StatefulSet
	// Pods of the validator (labelled ValidatorLabel and ComponentLabel),
	// by name: what the kubelet and the scheduler say of those that cannot
	// start.
	Pods []*corev1.Pod
	// Missing: per component, what its pod template reads (not optionally)
	// that is not there (podrefs.Lacking): a Secret or ConfigMap that does
	// not exist, or the keys a Secret lacks. Running pods keep running
	// without them, but none can (re)start.
	Missing map[string][]podrefs.Ref
	// Names of the workloads by component, as the renderer named them;
	// absent: the built-in layout's (Name).
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
	// ReasonSecretNotFound, ReasonConfigMapNotFound: a pod template reads
	// an object that does not exist; ReasonSecretKeyMissing: a key of a
	// Secret that exists (Observed.Missing).
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	ReasonSecretKeyMissing  = "SecretKeyMissing"
	// A pod that cannot start gives its own reason: the kubelet's waiting
	// reason (CreateContainerConfigError, InvalidImageName, ...) or the
	// scheduler's (Unschedulable).
)

// readiness of one workload.
type readiness struct {
	// available: the workload serves (a Deployment's Available condition, a
	// StatefulSet's ready replicas).
	available bool
	// settled: available, and every replica runs the current generation
	// (no rollout in progress).
	settled bool
	// blocked: a pod of the workload cannot start, or could not if it
	// restarted (reason and message say why); never available then.
	blocked bool
	reason  string
	message string
}

// blockedBy is r overridden by why component's pods cannot start, if any:
// a pod the kubelet or the scheduler reports first (it is what happens),
// then what the template reads that does not exist.
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

// missingReason is the reason of what m says is missing.
func missingReason(m podrefs.Ref) string {
	switch {
	case m.Kind == podrefs.ConfigMap:
		return ReasonConfigMapNotFound
	case len(m.Keys) > 0:
		return ReasonSecretKeyMissing
	}
	return ReasonSecretNotFound
}

// lacks says what m says is missing: the object, or its keys (names, never
// values).
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
	available := false
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			available = c.Status == corev1.ConditionTrue
		}
	}
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

// rollout is the readiness of a workload of kind that is available (have
// of its want replicas counted as such: available, ready) and has rolled
// out (updated replicas, each at the current generation).
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
// and the validator app are available, and while a pod of any workload
// cannot start (or could not if it restarted: a Secret it reads is gone);
// RUNNING from then on, COMPLETED while every workload of v is available
// and rolled out at its current generation (an edit that changes a
// workload moves a COMPLETED validator back to RUNNING until its rollout
// ends). Conditions keep their lastTransitionTime when their status does
// not change.
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
		// Nothing of ours to wait for: the external database is the
		// operator's; databaseReady (the internal database runs) stays false.
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

// startFailures are the kubelet's waiting reasons of a container it tried
// and failed to start (ContainerCreating and PodInitializing are progress).
var startFailures = map[string]bool{
	"CreateContainerConfigError": true, "CreateContainerError": true, "InvalidImageName": true,
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true,
	"CrashLoopBackOff": true, "RunContainerError": true, "PreStartHookError": true, "PostStartHookError": true,
}

// StartFailure is the reason and message of a Pod that cannot start: the
// scheduler's, or its first container waiting in a start failure; "", ""
// when none.
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
