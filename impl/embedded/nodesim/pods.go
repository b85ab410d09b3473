package nodesim

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hostIP is the simulated node's address: the containers "run" on this machine.
const hostIP = "127.0.0.1"

// syncPod does for one Pod what the scheduler and the kubelet would: bind
// it (room.go), after ReadyDelay report its status (kubelet.go), confirm a
// deletion at once.
func (s *Simulator) syncPod(ctx context.Context, key client.ObjectKey) (time.Duration, error) {
	pod := &corev1.Pod{}
	if err := s.client.Get(ctx, key, pod); err != nil {
		if apierrors.IsNotFound(err) {
			s.room.observe(key, nil, s.opts.NodeName)
		}
		return 0, client.IgnoreNotFound(err)
	}
	s.room.observe(key, pod, s.opts.NodeName)
	if pod.DeletionTimestamp != nil {
		if pod.Spec.NodeName != s.opts.NodeName {
			return 0, nil // unbound Pods are removed by the API server itself
		}
		// The containers are "stopped": confirm, as the kubelet does (a
		// conflict, another Pod of the name, is none: see reconciler).
		return 0, client.IgnoreNotFound(s.client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}))
	}
	if pod.Spec.NodeName == "" {
		if pod.Spec.SchedulerName != s.opts.SchedulerName {
			return 0, nil // another scheduler's
		}
		msg, bound := s.claimError(ctx, pod)
		if msg != "" {
			return 0, s.unschedulable(ctx, pod, msg)
		}
		if !bound {
			return 0, nil // a claim's change enqueues the Pod again
		}
		msg, err := s.room.reserve(ctx, s.client, pod, s.opts.NodeName)
		if err != nil {
			return 0, err
		}
		if msg != "" {
			return 0, s.unschedulable(ctx, pod, msg) // a Pod leaving the node enqueues it again
		}
		err = s.client.SubResource("binding").Create(ctx, pod, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: s.opts.NodeName},
		})
		switch {
		case apierrors.IsConflict(err):
			return 0, nil // bound meanwhile: its own event follows
		case err != nil:
			s.room.unreserve(pod)
			return 0, client.IgnoreNotFound(err) // deleted: its own event follows
		}
		return 0, nil
	}
	if pod.Spec.NodeName != s.opts.NodeName {
		return 0, nil
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return 0, nil
	}
	due := scheduledAt(pod).Add(s.opts.ReadyDelay)
	if wait := time.Until(due); wait > 0 {
		return wait, nil
	}
	status, warnings := s.kubeletStatus(ctx, pod)
	return 0, s.updateStatus(ctx, pod, status, s.kubelet, warnings)
}

// updateStatus writes st unless it is pod's status already, then records
// the warnings: an unchanged status records nothing again.
func (s *Simulator) updateStatus(ctx context.Context, pod *corev1.Pod, st *corev1.PodStatus, rec record.EventRecorder, warnings []warning) error {
	if equality.Semantic.DeepEqual(st, &pod.Status) {
		return nil
	}
	was := pod.DeepCopy()
	pod.Status = *st
	if err := s.client.Status().Update(ctx, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, w := range warnings {
		rec.Event(was, corev1.EventTypeWarning, w.reason, w.message)
	}
	return nil
}

// unschedulable reports why the scheduler leaves p unbound.
func (s *Simulator) unschedulable(ctx context.Context, pod *corev1.Pod, msg string) error {
	st := pod.Status.DeepCopy()
	st.Phase = corev1.PodPending
	setCondition(st, metav1.Now(), corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, msg)
	return s.updateStatus(ctx, pod, st, s.scheduler, []warning{{"FailedScheduling", msg}})
}

// scheduledAt is when the Pod was bound (its PodScheduled condition, which
// the API server sets on binding), or else created.
func scheduledAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// owner is the name of p's owner of kind (apiVersion), "" when it has none.
func owner(p *corev1.Pod, apiVersion, kind string) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == kind && o.APIVersion == apiVersion {
			return o.Name
		}
	}
	return ""
}

func ownedByJob(p *corev1.Pod) bool { return owner(p, "batch/v1", "Job") != "" }

// podIP is a stable address derived from the Pod's UID, on loopback, so
// that anything that dials a Pod IP stays on this machine.
func podIP(p *corev1.Pod) string {
	h := fnv.New32a()
	h.Write([]byte(p.UID))
	v := h.Sum32()
	return fmt.Sprintf("127.244.%d.%d", (v>>8)%256, v%254+1)
}

// warning is an event the kubelet records on a Pod it cannot start.
type warning struct{ reason, message string }

// kubeletStatus is the status the kubelet reports for p now, and the
// warnings it records with it. Containers already started stay as they are.
func (s *Simulator) kubeletStatus(ctx context.Context, p *corev1.Pod) (*corev1.PodStatus, []warning) {
	st := p.Status.DeepCopy()
	t := metav1.Now()
	st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	if st.StartTime == nil {
		st.StartTime = &t
	}
	if st.PodIP == "" { // no sandbox yet: its volumes come first
		if msg := s.mountError(ctx, p); msg != "" {
			unmounted(p, st, t)
			return st, []warning{{"FailedMount", msg}}
		}
	}
	ip := podIP(p)
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	var warnings []warning
	failed := false // a Job's container exited with an error
	// start is c's status when it has not started yet.
	start := func(c *corev1.Container, completes bool) corev1.ContainerStatus {
		if reason, msg := s.startError(ctx, p, c); reason != "" {
			warnings = append(warnings, startWarning(reason, msg))
			return waitingStatus(c, reason, msg)
		}
		if msg := s.authError(ctx, p, c); msg != "" { // database.go
			if ownedByJob(p) {
				failed = true
				return exitedStatus(p, c, t, 1, msg)
			}
			cs := waitingStatus(c, ReasonCrashLoopBackOff, fmt.Sprintf("back-off 10s restarting failed container=%s pod=%s_%s(%s)", c.Name, p.Name, p.Namespace, p.UID))
			cs.LastTerminationState = exitedStatus(p, c, t, 1, msg).State
			warnings = append(warnings, warning{"BackOff", "Back-off restarting failed container " + c.Name + " in pod " + p.Name + "_" + p.Namespace + "(" + string(p.UID) + ")"})
			return cs
		}
		s.serverStarts(ctx, p, c)
		if completes {
			return exitedStatus(p, c, t, 0, "")
		}
		return corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(p, c.Name),
			Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		}
	}
	var pendingInit, unready []string
	st.InitContainerStatuses = each(p.Spec.InitContainers, p.Status.InitContainerStatuses, func(c *corev1.Container, old *corev1.ContainerStatus) corev1.ContainerStatus {
		cs := waitingStatus(c, reasonPodInitializing, "")
		switch {
		case old != nil && old.State.Terminated != nil:
			cs = *old
		case len(pendingInit) == 0: // init containers run one after another
			cs = start(c, true)
		}
		if cs.State.Terminated == nil {
			pendingInit = append(pendingInit, c.Name)
		}
		return cs
	})
	st.ContainerStatuses = each(p.Spec.Containers, p.Status.ContainerStatuses, func(c *corev1.Container, old *corev1.ContainerStatus) corev1.ContainerStatus {
		cs := waitingStatus(c, reasonPodInitializing, "")
		switch {
		case len(pendingInit) > 0:
		case old != nil && (old.State.Running != nil || old.State.Terminated != nil):
			cs = *old // resolved when it started: a later change does not stop it
		default:
			cs = start(c, ownedByJob(p))
		}
		if cs.State.Waiting != nil {
			unready = append(unready, c.Name)
		}
		return cs
	})
	setCondition(st, t, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "")
	initialized(st, t, pendingInit)
	switch {
	case failed:
		st.Phase = corev1.PodFailed
		ready(st, t, corev1.ConditionFalse, "PodFailed", "")
	case len(pendingInit) > 0 || len(unready) > 0:
		st.Phase = corev1.PodPending
		notReady(st, t, append(pendingInit, unready...))
	case ownedByJob(p):
		st.Phase = corev1.PodSucceeded
		ready(st, t, corev1.ConditionFalse, "PodCompleted", "")
	default:
		st.Phase = corev1.PodRunning
		ready(st, t, corev1.ConditionTrue, "", "")
	}
	return st, warnings
}

// unmounted is the status of a Pod whose volumes cannot be set up: no
// sandbox, no address, every container waiting to be created.
func unmounted(p *corev1.Pod, st *corev1.PodStatus, t metav1.Time) {
	st.Phase = corev1.PodPending
	st.PodIP, st.PodIPs = "", nil
	st.InitContainerStatuses, st.ContainerStatuses = nil, nil
	var names, initNames []string
	for i := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, waitingStatus(&p.Spec.InitContainers[i], reasonContainerCreating, ""))
		initNames = append(initNames, p.Spec.InitContainers[i].Name)
	}
	reason := reasonContainerCreating
	if len(initNames) > 0 {
		reason = reasonPodInitializing
	}
	for i := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, waitingStatus(&p.Spec.Containers[i], reason, ""))
		names = append(names, p.Spec.Containers[i].Name)
	}
	setCondition(st, t, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "")
	initialized(st, t, initNames)
	notReady(st, t, append(initNames, names...))
}

// startWarning is the event the kubelet records for a container it cannot start.
func startWarning(reason, msg string) warning {
	if reason == ReasonInvalidImageName {
		return warning{"InspectFailed", msg}
	}
	return warning{"Failed", "Error: " + msg}
}

// each is next's status of every container of cs, given its old one or nil.
func each(cs []corev1.Container, old []corev1.ContainerStatus, next func(*corev1.Container, *corev1.ContainerStatus) corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus // nil for none, as the API server returns it
	for i := range cs {
		out = append(out, next(&cs[i], containerStatus(old, cs[i].Name)))
	}
	return out
}

func containerStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	if i := slices.IndexFunc(list, func(s corev1.ContainerStatus) bool { return s.Name == name }); i >= 0 {
		return &list[i]
	}
	return nil
}

func waitingStatus(c *corev1.Container, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptr.To(false),
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

// exitedStatus is c's status after it exited; msg stands for the log's tail
// that the kubelet reports as termination message.
func exitedStatus(p *corev1.Pod, c *corev1.Container, t metav1.Time, code int32, msg string) corev1.ContainerStatus {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(p, c.Name), Started: ptr.To(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, StartedAt: t, FinishedAt: t}},
	}
}

func containerID(p *corev1.Pod, name string) string {
	return "nodesim://" + string(p.UID) + "/" + name
}

// initialized sets the Initialized condition as the kubelet words it.
func initialized(st *corev1.PodStatus, t metav1.Time, pending []string) {
	if len(pending) == 0 {
		setCondition(st, t, corev1.PodInitialized, corev1.ConditionTrue, "", "")
		return
	}
	setCondition(st, t, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized",
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pending, " ")))
}

// notReady sets ContainersReady and Ready false as the kubelet words them.
func notReady(st *corev1.PodStatus, t metav1.Time, unready []string) {
	ready(st, t, corev1.ConditionFalse, "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
}

// ready sets ContainersReady and Ready, which the kubelet sets alike.
func ready(st *corev1.PodStatus, t metav1.Time, status corev1.ConditionStatus, reason, msg string) {
	setCondition(st, t, corev1.ContainersReady, status, reason, msg)
	setCondition(st, t, corev1.PodReady, status, reason, msg)
}

// setCondition sets one condition, keeping its transition time while its
// status holds (so that the same status written twice is no change).
func setCondition(st *corev1.PodStatus, t metav1.Time, typ corev1.PodConditionType, status corev1.ConditionStatus, reason, msg string) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type == typ {
			if c.Status != status {
				c.LastTransitionTime = t
			}
			c.Status, c.Reason, c.Message = status, reason, msg
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: t})
}
