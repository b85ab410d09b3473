package cluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func service(annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "v1-participant", Namespace: "ns", Labels: map[string]string{"app": "v1"}, Annotations: annotations},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "v1"}, Ports: []corev1.ServicePort{
			{Name: "lg-api", Port: 5001, Protocol: corev1.ProtocolTCP},
		}},
	}
}

func toRequest(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	return &unstructured.Unstructured{Object: m}, nil
}

// An apply request is told applied by the digests the object carries: the
// request's, recorded with the object, and that of the fields its manager
// owns, which the cache keeps in place of managedFields.
func TestApplyRequest(t *testing.T) {
	req, err := NewApplyRequest(service(nil), toRequest)
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewApplyRequest(service(nil), toRequest)
	if err != nil || again.digest != req.digest {
		t.Fatalf("digest of the same object: got %s %v, want %s", again.digest, err, req.digest)
	}
	other, _ := NewApplyRequest(service(map[string]string{"note": "x"}), toRequest)
	if other.digest == req.digest {
		t.Fatal("two requests have the same digest")
	}
	obj, err := req.Object()
	if err != nil {
		t.Fatal(err)
	}
	applied := obj.GetAnnotations()[AppliedAnnotation]
	if want := req.digest + "."; len(applied) != len(want)+32 || applied[:len(want)] != want {
		t.Fatalf("annotation sent: got %q, want %q and the fields' digest", applied, want)
	}
	if obj.GetKind() != "Service" || obj.Object["status"] != nil {
		t.Fatalf("request sent: got %v, want the Service as toRequest makes it", obj.Object)
	}
	if req.obj.GetAnnotations() != nil {
		t.Fatal("Object changed the object applied")
	}

	owned := applied[len(req.digest)+1:]
	tests := []struct {
		name   string
		cached *WorkloadRecord
		want   bool
	}{
		{"as applied", &WorkloadRecord{Applied: applied, Owned: owned}, true},
		{"fields taken over or removed", &WorkloadRecord{Applied: applied, Owned: "0123"}, false},
		{"another request applied", &WorkloadRecord{Applied: other.digest + "." + owned, Owned: owned}, false},
		{"no apply of ours", &WorkloadRecord{Applied: applied}, false},
		{"never applied", &WorkloadRecord{}, false},
	}
	for _, tt := range tests {
		if got := req.Applied(tt.cached); got != tt.want {
			t.Errorf("%s: Applied %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The cache keeps a workload as its record: of managedFields the digest of
// FieldOwner's apply entry, of the annotations the applied one, and what
// the status tells; a record comes out of the transform as it went in.
func TestRecordWorkload(t *testing.T) {
	ours := metav1.ManagedFieldsEntry{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}}
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
		{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}},
		ours,
	}
	owner := metav1.OwnerReference{APIVersion: "validator-manager.io/v1alpha1", Kind: "Validator", Name: "v1", UID: "u1", Controller: ptr.To(true)}
	meta := metav1.ObjectMeta{Name: "v1-participant", Namespace: "ns", UID: "d1", ResourceVersion: "7", Generation: 3,
		Labels: map[string]string{"app": "v1"}, Annotations: map[string]string{AppliedAnnotation: "a.b", "other": "x"},
		OwnerReferences: []metav1.OwnerReference{owner}, ManagedFields: entries}
	key := RecordMeta{Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID, ResourceVersion: meta.ResourceVersion,
		Generation: meta.Generation, OwnerReferences: meta.OwnerReferences}
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pg-data"}}
	tests := []struct {
		name string
		obj  client.Object
		want *WorkloadRecord
	}{
		{"Deployment", &appsv1.Deployment{ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse}, {Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Message: "m"}}}},
			&WorkloadRecord{RecordMeta: key, Applied: "a.b", Owned: digest(ours.FieldsV1.Raw), Replicas: 2,
				Status: RolloutStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, AvailableCondition: true}}},
		{"Deployment without replicas, unavailable", &appsv1.Deployment{ObjectMeta: meta,
			Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse}}}},
			&WorkloadRecord{RecordMeta: key, Applied: "a.b", Owned: digest(ours.FieldsV1.Raw), Replicas: 1}},
		{"StatefulSet mid rollout", &appsv1.StatefulSet{ObjectMeta: meta,
			Spec:   appsv1.StatefulSetSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 1, ReadyReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r2"}},
			&WorkloadRecord{RecordMeta: key, Applied: "a.b", Owned: digest(ours.FieldsV1.Raw), Replicas: 1, ClaimTemplates: []corev1.PersistentVolumeClaim{claim},
				Status: RolloutStatus{ObservedGeneration: 3, Replicas: 1, ReadyReplicas: 1}}},
		{"StatefulSet rolled out", &appsv1.StatefulSet{ObjectMeta: meta, Status: appsv1.StatefulSetStatus{CurrentRevision: "r2", UpdateRevision: "r2"}},
			&WorkloadRecord{RecordMeta: key, Applied: "a.b", Owned: digest(ours.FieldsV1.Raw), Replicas: 1, Status: RolloutStatus{Revised: true}}},
		{"Service no apply of ours", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: entries[:2]}},
			&WorkloadRecord{RecordMeta: RecordMeta{Name: "s"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := recordWorkload(tt.obj)
			if err != nil || !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v %v, want %+v", got, err, tt.want)
			}
			if again, err := recordWorkload(got); err != nil || again != got {
				t.Fatalf("a record transformed again: got %+v %v, want it as it was", again, err)
			}
			if c := got.(*WorkloadRecord).DeepCopyObject(); !equality.Semantic.DeepEqual(c, got) {
				t.Fatalf("copy: got %+v, want %+v", c, got)
			}
		})
	}
}
