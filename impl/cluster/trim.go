package cluster

import (
	"fmt"
	"slices"
	"strings"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Transforms of the kinds the controllers watch but read little of: each
// keeps a new object with the fields its reader reads and lets the decoded
// one go, so that the cache holds some hundred bytes where the object as
// stored takes several KB (a Pod's spec, with every container's
// environment and volumes, and its managedFields). An object already
// transformed comes out the same (client-go may pass one again).

// PodRecord is what the Manager's cache keeps of a Pod in its place
// (trimPod): its key, deletion, the validator and component it belongs to
// (its ValidatorLabel and ComponentLabel) and why it cannot start
// (StartFailure), all that the workload controller reads of it. Pods are
// the most numerous objects of a validator; a record takes some 400 bytes
// where a trimmed corev1.Pod, 1.2 KB of struct before its maps and slices,
// took 2.3 KB. It is a client.Object, so that the informer and the
// controllers' event handlers take it; the typed client cannot read it out
// of the cache (a Get or List of Pods through the cache fails), so the
// workload controller keeps the records its Pod handler is given.
type PodRecord struct {
	metav1.ObjectMeta // name, namespace, UID, resourceVersion and deletion only
	// Validator and Component are the Pod's ValidatorLabel and
	// ComponentLabel ("" when it has none).
	Validator, Component string
	// Reason and Message say why the Pod cannot start (StartFailure);
	// both "" when nothing stops it.
	Reason, Message string
}

var _ client.Object = (*PodRecord)(nil)

// GetObjectKind: a record carries no kind (the informer it is in knows it).
func (p *PodRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the record.
func (p *PodRecord) DeepCopyObject() runtime.Object {
	c := *p
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// GetLabels are the two labels the record keeps.
func (p *PodRecord) GetLabels() map[string]string {
	l := make(map[string]string, 2)
	if p.Validator != "" {
		l[ValidatorLabel] = p.Validator
	}
	if p.Component != "" {
		l[ComponentLabel] = p.Component
	}
	return l
}

// SetLabels keeps of labels the two a record keeps.
func (p *PodRecord) SetLabels(labels map[string]string) {
	p.Validator, p.Component = labels[ValidatorLabel], labels[ComponentLabel]
}

// RecordOf folds p into its record.
func RecordOf(p *corev1.Pod) *PodRecord {
	r := &PodRecord{Validator: unique.Make(p.Labels[ValidatorLabel]).Value(), Component: unique.Make(p.Labels[ComponentLabel]).Value()}
	r.Name, r.Namespace, r.UID, r.ResourceVersion = p.Name, unique.Make(p.Namespace).Value(), p.UID, p.ResourceVersion
	r.DeletionTimestamp = p.DeletionTimestamp
	r.Reason, r.Message = StartFailure(p)
	return r
}

// trimPod is the transform of Pods: their records. A record comes out as
// it went in (client-go may pass one again).
func trimPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return RecordOf(p), nil
	}
	return obj, nil
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

// trimClaim keeps of a PersistentVolumeClaim what the workload controller
// reads: key, labels, owners and deletion, and the storage it requests
// (which it grows by a merge patch computed from this object).
func trimClaim(obj any) (any, error) {
	c, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return obj, nil
	}
	t := &corev1.PersistentVolumeClaim{ObjectMeta: keyMeta(c.ObjectMeta)}
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
	t := &batchv1.Job{ObjectMeta: keyMeta(j.ObjectMeta)}
	t.Status.StartTime, t.Status.CompletionTime, t.Status.Conditions = j.Status.StartTime, j.Status.CompletionTime, j.Status.Conditions
	return t, nil
}

// trimRollout keeps of a Deployment or StatefulSet (its owned fields'
// digest taken already, dropPodTemplate) what the workload controller
// reads, and not its pod template: key,
// generation, labels, owners and this program's own annotations (what a
// transform records there), the replicas it wants, a
// StatefulSet's claim templates (which it keeps when it applies), and the
// rollout's progress in its status (of a Deployment's conditions, type
// and status).
func trimRollout(obj any) any {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		t := &appsv1.Deployment{}
		t.ObjectMeta = rolloutMeta(w.ObjectMeta)
		t.Spec.Replicas = w.Spec.Replicas
		s := w.Status
		t.Status = appsv1.DeploymentStatus{ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas,
			UpdatedReplicas: s.UpdatedReplicas, ReadyReplicas: s.ReadyReplicas, AvailableReplicas: s.AvailableReplicas}
		if len(s.Conditions) > 0 {
			t.Status.Conditions = make([]appsv1.DeploymentCondition, len(s.Conditions))
			for i, c := range s.Conditions {
				t.Status.Conditions[i] = appsv1.DeploymentCondition{Type: c.Type, Status: c.Status}
			}
		}
		return t
	case *appsv1.StatefulSet:
		t := &appsv1.StatefulSet{}
		t.ObjectMeta = rolloutMeta(w.ObjectMeta)
		t.Spec.Replicas, t.Spec.VolumeClaimTemplates = w.Spec.Replicas, w.Spec.VolumeClaimTemplates
		s := w.Status
		t.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas,
			ReadyReplicas: s.ReadyReplicas, UpdatedReplicas: s.UpdatedReplicas, AvailableReplicas: s.AvailableReplicas,
			CurrentRevision: s.CurrentRevision, UpdateRevision: s.UpdateRevision}
		return t
	}
	return obj
}

// trimService keeps of a Service (its owned fields' digest taken already,
// digestService) its metadata as trimRollout does: the workload
// controller compares this program's annotations and reads its owners,
// never its spec.
func trimService(s *corev1.Service) *corev1.Service {
	return &corev1.Service{ObjectMeta: rolloutMeta(s.ObjectMeta)}
}

// keyMeta is what a trimmed object keeps of its metadata at least: its
// key, labels, owners and deletion.
func keyMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Labels: interned(m.Labels), OwnerReferences: internedOwners(m.OwnerReferences), DeletionTimestamp: m.DeletionTimestamp}
}

// rolloutMeta is what trimRollout and trimService keep of metadata: keyMeta,
// the generation and this program's own annotations.
func rolloutMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	k := keyMeta(m)
	k.Generation, k.Annotations = m.Generation, ownAnnotations(m.Annotations)
	return k
}

// ownAnnotations are the annotations of a that are this program's (their
// keys in its group), nil when none.
func ownAnnotations(a map[string]string) map[string]string {
	var own map[string]string
	for k, v := range a {
		if strings.HasPrefix(k, Group+"/") {
			if own == nil {
				own = make(map[string]string, 1)
			}
			own[k] = v
		}
	}
	return own
}

// interned is labels with each key and value kept once per process
// (unique.Make): the same few keys, components and validator names recur
// on every object of a validator. With keys, only those.
func interned(labels map[string]string, keys ...string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	out := make(map[string]string, max(len(keys), len(labels)))
	for k, v := range labels {
		if len(keys) == 0 || slices.Contains(keys, k) {
			out[unique.Make(k).Value()] = unique.Make(v).Value()
		}
	}
	return out
}

// internedOwners are refs with their API version, kind and name interned.
func internedOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return nil
	}
	out := make([]metav1.OwnerReference, len(refs))
	for i, r := range refs {
		r.APIVersion, r.Kind, r.Name = unique.Make(r.APIVersion).Value(), unique.Make(r.Kind).Value(), unique.Make(r.Name).Value()
		out[i] = r
	}
	return out
}
