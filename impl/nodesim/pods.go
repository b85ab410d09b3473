package nodesim

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// hostIP is the simulated node's address: the containers "run" on this machine.
const hostIP = "127.0.0.1"

// PodCIDR is the range Pod IPs come from: loopback, so that anything that
// dials a Pod IP on the embedded default (a Service proxy, a probe) stays on
// this machine, where nothing listens for the simulated containers.
const PodCIDR = "127.244.0.0/16"

// syncPod does for one Pod what the scheduler and the kubelet would:
// bind it when its claims are bound; after ReadyDelay report it running and
// ready (a Job's Pod: succeeded); confirm a deletion at once. It returns how
// long to wait before the Pod's next step is due.
func (s *Simulator) syncPod(ctx context.Context, namespace, name string) (time.Duration, error) {
	pod, err := s.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	api := s.core.CoreV1().Pods(namespace)
	if pod.DeletionTimestamp != nil {
		if pod.Spec.NodeName != s.opts.NodeName {
			return 0, nil // unbound Pods are removed by the API server itself
		}
		// The containers are "stopped": confirm, as the kubelet does.
		err := api.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return 0, nil
		}
		return 0, err
	}
	if pod.Spec.NodeName == "" {
		if !s.claimsBound(pod) {
			return 0, nil // a claim's change enqueues the Pod again
		}
		err := api.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: s.opts.NodeName},
		}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return 0, nil // deleted, or bound meanwhile: its own event follows
		}
		return 0, err
	}
	if pod.Spec.NodeName != s.opts.NodeName {
		return 0, nil
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return 0, nil
	}
	due := scheduledAt(pod).Add(s.opts.ReadyDelay)
	if wait := due.Sub(s.opts.Now()); wait > 0 {
		return wait, nil
	}
	var status *corev1.PodStatus
	if ownedByJob(pod) {
		status = succeededStatus(pod, s.opts.Now())
	} else if !podReady(pod) {
		status = runningStatus(pod, s.opts.Now())
	} else {
		return 0, nil
	}
	p := pod.DeepCopy()
	p.Status = *status
	_, err = api.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
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

func ownedByJob(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "Job" && o.APIVersion == "batch/v1" {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podIP is a stable address in PodCIDR derived from the Pod's UID.
func podIP(p *corev1.Pod) string {
	h := fnv.New32a()
	h.Write([]byte(p.UID))
	v := h.Sum32()
	return fmt.Sprintf("127.244.%d.%d", (v>>8)%256, v%254+1)
}

func baseStatus(p *corev1.Pod, now time.Time) *corev1.PodStatus {
	st := p.Status.DeepCopy()
	t := metav1.NewTime(now)
	st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	ip := podIP(p)
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	if st.StartTime == nil {
		st.StartTime = &t
	}
	st.InitContainerStatuses = nil
	for _, c := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(p, c.Name), Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: t, FinishedAt: t}},
		})
	}
	return st
}

func containerID(p *corev1.Pod, name string) string {
	return "nodesim://" + string(p.UID) + "/" + name
}

func runningStatus(p *corev1.Pod, now time.Time) *corev1.PodStatus {
	st := baseStatus(p, now)
	t := metav1.NewTime(now)
	st.Phase = corev1.PodRunning
	st.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(p, c.Name),
			Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		})
	}
	setConditions(st, t, corev1.ConditionTrue, "")
	return st
}

func succeededStatus(p *corev1.Pod, now time.Time) *corev1.PodStatus {
	st := baseStatus(p, now)
	t := metav1.NewTime(now)
	st.Phase = corev1.PodSucceeded
	st.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(p, c.Name), Started: ptr.To(false),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: t, FinishedAt: t}},
		})
	}
	setConditions(st, t, corev1.ConditionFalse, "PodCompleted")
	return st
}

// setConditions sets the kubelet's conditions: initialized, sandbox ready,
// and (containers) ready as given.
func setConditions(st *corev1.PodStatus, t metav1.Time, ready corev1.ConditionStatus, reason string) {
	set := func(typ corev1.PodConditionType, status corev1.ConditionStatus, reason string) {
		for i := range st.Conditions {
			if st.Conditions[i].Type == typ {
				if st.Conditions[i].Status != status {
					st.Conditions[i].LastTransitionTime = t
				}
				st.Conditions[i].Status, st.Conditions[i].Reason = status, reason
				return
			}
		}
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: typ, Status: status, Reason: reason, LastTransitionTime: t})
	}
	set(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "")
	set(corev1.PodInitialized, corev1.ConditionTrue, "")
	set(corev1.ContainersReady, ready, reason)
	set(corev1.PodReady, ready, reason)
}
