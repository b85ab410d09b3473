package cluster

import (
	"fmt"
	"maps"
	"slices"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
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
// the most numerous objects of a validator; a record takes under 300 bytes
// where a trimmed corev1.Pod, 1.2 KB of struct before its maps and slices,
// took 2.3 KB. It is a client.Object, so that the informer and the
// controllers' event handlers take it; the typed client cannot read it out
// of the cache (a Get or List of Pods through the cache fails), so the
// workload controller keeps the records its Pod handler is given.
type PodRecord struct {
	RecordMeta // name, namespace, UID, resourceVersion and deletion only
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
	c.RecordMeta = p.RecordMeta.deepCopy()
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
	r.RecordMeta = RecordMeta{Name: p.Name, Namespace: unique.Make(p.Namespace).Value(), UID: p.UID, ResourceVersion: p.ResourceVersion,
		DeletionTimestamp: p.DeletionTimestamp}
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

// ClaimRecord is what the Manager's cache keeps of a PersistentVolumeClaim
// in its place (recordClaim): its key, owners and deletion, the validator
// it belongs to (its ValidatorLabel) and the storage it requests, all that
// the workload controller reads of it (whether it exists, and whether it
// must grow). A trimmed corev1.PersistentVolumeClaim took 1.6 KB with its
// label and request maps, a record under 300 bytes. The workload controller
// keeps the records its claim watch's handler is given.
type ClaimRecord struct {
	RecordMeta
	// Validator is the claim's ValidatorLabel ("" when it has none).
	Validator string
	// Storage is spec.resources.requests.storage (zero when it has none).
	Storage resource.Quantity
}

var _ client.Object = (*ClaimRecord)(nil)

// GetObjectKind: a record carries no kind (the informer it is in knows it).
func (c *ClaimRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the record.
func (c *ClaimRecord) DeepCopyObject() runtime.Object {
	out := *c
	out.RecordMeta = c.RecordMeta.deepCopy()
	out.Storage = c.Storage.DeepCopy()
	return &out
}

// GetLabels is the one label the record keeps.
func (c *ClaimRecord) GetLabels() map[string]string { return validatorLabels(c.Validator) }

// SetLabels keeps of labels the one a record keeps.
func (c *ClaimRecord) SetLabels(labels map[string]string) { c.Validator = labels[ValidatorLabel] }

// validatorLabels are the labels of a record that keeps one, the validator
// it belongs to ("": none).
func validatorLabels(validator string) map[string]string {
	if validator == "" {
		return map[string]string{}
	}
	return map[string]string{ValidatorLabel: validator}
}

// recordClaim is the transform of PersistentVolumeClaims: their records. A
// record comes out as it went in.
func recordClaim(obj any) (any, error) {
	c, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return obj, nil
	}
	r := &ClaimRecord{Validator: unique.Make(c.Labels[ValidatorLabel]).Value(), Storage: c.Spec.Resources.Requests[corev1.ResourceStorage]}
	r.RecordMeta = metaOf(c)
	return r, nil
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

// WorkloadRecord is what the Manager's cache keeps of a Deployment, a
// StatefulSet or a Service in its place (recordWorkload): its key,
// generation, owners and deletion, whether it holds what FieldOwner last
// applied (ApplyRequest.Applied), the replicas it wants and its rollout's
// progress, all that the workload controller reads of it. A trimmed
// typed Deployment, its pod template emptied, still took 2.5 KB with its
// label and annotation maps; a record takes some 450 bytes. As PodRecord,
// the typed client cannot read it out of the cache: the workload
// controller keeps the records its watches' handlers are given.
type WorkloadRecord struct {
	RecordMeta // name, namespace, UID, resourceVersion, generation, owners and deletion
	// Applied is the object's AppliedAnnotation; Owned the digest of the
	// fields FieldOwner's applies own now (ownedFields). Either is "" when
	// there is none.
	Applied, Owned string
	// Replicas is how many replicas the spec wants (1 when it says
	// nothing); 0 of a Service.
	Replicas int32
	// Status is a Deployment's or StatefulSet's rollout; zero of a Service.
	Status RolloutStatus
	// ClaimTemplates are a StatefulSet's volume claim templates, which the
	// workload controller applies as they are: Kubernetes forbids a change.
	ClaimTemplates []corev1.PersistentVolumeClaim
}

// RolloutStatus is what the workload controller reads of a Deployment's or
// StatefulSet's status.
type RolloutStatus struct {
	ObservedGeneration                                          int64
	Replicas, UpdatedReplicas, ReadyReplicas, AvailableReplicas int32
	// AvailableCondition: a Deployment's Available condition is True.
	AvailableCondition bool
	// Revised: every replica of a StatefulSet runs its update revision
	// (its current revision is its update revision, or it has none).
	Revised bool
}

var _ client.Object = (*WorkloadRecord)(nil)

// GetObjectKind: a record carries no kind (the informer it is in knows it).
func (w *WorkloadRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the record.
func (w *WorkloadRecord) DeepCopyObject() runtime.Object {
	c := *w
	c.RecordMeta = w.RecordMeta.deepCopy()
	if w.ClaimTemplates != nil {
		c.ClaimTemplates = make([]corev1.PersistentVolumeClaim, len(w.ClaimTemplates))
		for i := range w.ClaimTemplates {
			w.ClaimTemplates[i].DeepCopyInto(&c.ClaimTemplates[i])
		}
	}
	return &c
}

// recordWorkload is the transform of Deployments, StatefulSets and
// Services: their records (RecordWorkload). A record comes out as it went
// in.
func recordWorkload(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		if r := RecordWorkload(o); r != nil {
			return r, nil
		}
	}
	return obj, nil
}

// RecordWorkload is the record of a Deployment, StatefulSet or Service;
// nil of any other object.
func RecordWorkload(o client.Object) *WorkloadRecord {
	r := &WorkloadRecord{}
	switch w := o.(type) {
	case *appsv1.Deployment:
		r.Replicas = ptr.Deref(w.Spec.Replicas, 1)
		s := w.Status
		r.Status = RolloutStatus{ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas,
			UpdatedReplicas: s.UpdatedReplicas, ReadyReplicas: s.ReadyReplicas, AvailableReplicas: s.AvailableReplicas}
		for _, c := range s.Conditions {
			if c.Type == appsv1.DeploymentAvailable {
				r.Status.AvailableCondition = c.Status == corev1.ConditionTrue
			}
		}
	case *appsv1.StatefulSet:
		r.Replicas, r.ClaimTemplates = ptr.Deref(w.Spec.Replicas, 1), w.Spec.VolumeClaimTemplates
		s := w.Status
		r.Status = RolloutStatus{ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas,
			UpdatedReplicas: s.UpdatedReplicas, ReadyReplicas: s.ReadyReplicas, AvailableReplicas: s.AvailableReplicas,
			Revised: s.UpdateRevision == "" || s.CurrentRevision == s.UpdateRevision}
	case *corev1.Service:
	default:
		return nil
	}
	r.Applied, r.Owned = o.GetAnnotations()[AppliedAnnotation], ownedFields(o.GetManagedFields())
	r.RecordMeta = metaOf(o)
	return r
}

// keyMeta is what a trimmed object keeps of its metadata at least: its
// key, labels, owners and deletion.
func keyMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Labels: interned(m.Labels), OwnerReferences: internedOwners(m.OwnerReferences), DeletionTimestamp: m.DeletionTimestamp}
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

// SecretRecord is what the Manager's cache keeps of a Secret in its place
// (recordSecret): its key, owners and deletion, the validator it belongs
// to (its ValidatorLabel) and the keys of its data, never a value. Its
// readers ask whether a Secret exists and has a key; a trimmed
// corev1.Secret, its values dropped, still took 1.3 KB with its label and
// data maps, a record some 400 bytes. The typed client cannot read it out
// of the cache: the gateway keeps the records its informer's handler is
// given (records), the workload controller the names.
type SecretRecord struct {
	RecordMeta
	// Validator is the Secret's ValidatorLabel ("" when it has none).
	Validator string
	// Keys are the keys of its data and stringData, sorted.
	Keys []string
}

var _ client.Object = (*SecretRecord)(nil)

// GetObjectKind: a record carries no kind (the informer it is in knows it).
func (s *SecretRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the record (its keys are shared: never changed).
func (s *SecretRecord) DeepCopyObject() runtime.Object {
	c := *s
	c.RecordMeta = s.RecordMeta.deepCopy()
	return &c
}

// GetLabels is the one label the record keeps.
func (s *SecretRecord) GetLabels() map[string]string { return validatorLabels(s.Validator) }

// SetLabels keeps of labels the one a record keeps.
func (s *SecretRecord) SetLabels(labels map[string]string) { s.Validator = labels[ValidatorLabel] }

// Has tells whether the Secret has key.
func (s *SecretRecord) Has(key string) bool {
	_, ok := slices.BinarySearch(s.Keys, key)
	return ok
}

// recordSecret is the transform of Secrets: their records. A record comes
// out as it went in.
func recordSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	r := &SecretRecord{Validator: unique.Make(s.Labels[ValidatorLabel]).Value()}
	r.RecordMeta = metaOf(s)
	for k := range s.Data {
		r.Keys = append(r.Keys, unique.Make(k).Value())
	}
	for k := range s.StringData {
		r.Keys = append(r.Keys, unique.Make(k).Value())
	}
	slices.Sort(r.Keys)
	r.Keys = slices.Clip(slices.Compact(r.Keys))
	return r, nil
}

// CronJobRecord is what the Manager's cache keeps of a CronJob in its
// place (recordCronJob): its key, labels, owners and deletion, and the
// digest of the fields of its spec the gateway sets (cronJobDigest), which
// is what the gateway compares. A batchv1.CronJob is 1.5 KB of struct
// before any field is set (its pod template is held by value); a record
// takes some 600 bytes. The gateway keeps the records its informer's
// handler is given (records).
type CronJobRecord struct {
	RecordMeta
	// Labels are the CronJob's labels.
	Labels map[string]string
	// Digest is cronJobDigest of its spec.
	Digest string
}

var _ client.Object = (*CronJobRecord)(nil)

// GetObjectKind: a record carries no kind (the informer it is in knows it).
func (c *CronJobRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the record.
func (c *CronJobRecord) DeepCopyObject() runtime.Object {
	out := *c
	out.RecordMeta = c.RecordMeta.deepCopy()
	out.Labels = maps.Clone(c.Labels)
	return &out
}

// GetLabels are the CronJob's labels.
func (c *CronJobRecord) GetLabels() map[string]string { return c.Labels }

// SetLabels sets them.
func (c *CronJobRecord) SetLabels(labels map[string]string) { c.Labels = labels }

// recordCronJob is the transform of CronJobs: their records. A record
// comes out as it went in.
func recordCronJob(obj any) (any, error) {
	cj, ok := obj.(*batchv1.CronJob)
	if !ok {
		return obj, nil
	}
	digest, err := cronJobDigest(cj.Spec)
	if err != nil {
		return nil, err
	}
	r := &CronJobRecord{Digest: digest}
	r.RecordMeta = metaOf(cj)
	r.Labels = interned(cj.Labels)
	return r, nil
}
