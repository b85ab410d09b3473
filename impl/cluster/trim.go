package cluster

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Transforms of the kinds the controllers watch but read little of: each
// keeps a new object with the fields its reader reads and lets the decoded
// one go, so that the cache holds some hundred bytes where the object as
// stored takes several KB (a Pod's spec, with every container's
// environment and volumes, and its managedFields). An object already
// transformed comes out the same (client-go may pass one again).

// trimPod keeps of a Pod what the workload controller reads (its Status
// function): key, labels and deletion, and of its status the phase, the
// scheduler's condition and each container's name and waiting state (why
// it cannot start). Pods are the most numerous objects of a validator.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	t := &corev1.Pod{}
	t.Name, t.Namespace, t.UID, t.ResourceVersion = p.Name, p.Namespace, p.UID, p.ResourceVersion
	t.Labels, t.DeletionTimestamp = p.Labels, p.DeletionTimestamp
	t.Status.Phase = p.Status.Phase
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			t.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}}
		}
	}
	t.Status.InitContainerStatuses = waitingStates(p.Status.InitContainerStatuses)
	t.Status.ContainerStatuses = waitingStates(p.Status.ContainerStatuses)
	return t, nil
}

// waitingStates are containers' names and waiting states.
func waitingStates(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(cs))
	for i, c := range cs {
		out[i].Name = c.Name
		if w := c.State.Waiting; w != nil {
			out[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
	}
	return out
}

// trimClaim keeps of a PersistentVolumeClaim what the workload controller
// reads: key, labels, owners and deletion, and the storage it requests
// (which it grows by a merge patch computed from this object).
func trimClaim(obj any) (any, error) {
	c, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return obj, nil
	}
	t := &corev1.PersistentVolumeClaim{}
	t.Name, t.Namespace, t.UID, t.ResourceVersion = c.Name, c.Namespace, c.UID, c.ResourceVersion
	t.Labels, t.OwnerReferences, t.DeletionTimestamp = c.Labels, c.OwnerReferences, c.DeletionTimestamp
	t.Spec.Resources.Requests = c.Spec.Resources.Requests
	return t, nil
}

// trimJob keeps of a Job what the runs controller reads (runs.Observe):
// key, labels, owners and deletion, and its status's times and
// conditions. The spec, a pod template with the backup script, is not.
func trimJob(obj any) (any, error) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	t := &batchv1.Job{}
	t.Name, t.Namespace, t.UID, t.ResourceVersion = j.Name, j.Namespace, j.UID, j.ResourceVersion
	t.Labels, t.OwnerReferences, t.DeletionTimestamp = j.Labels, j.OwnerReferences, j.DeletionTimestamp
	t.Status.StartTime, t.Status.CompletionTime, t.Status.Conditions = j.Status.StartTime, j.Status.CompletionTime, j.Status.Conditions
	return t, nil
}
