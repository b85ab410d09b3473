package cluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func service(annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "v1-participant", "namespace": "ns", "labels": map[string]any{"app": "v1"}},
		"spec": map[string]any{"selector": map[string]any{"app": "v1"}, "ports": []any{
			map[string]any{"name": "lg-api", "port": int64(5001), "protocol": "TCP"},
		}},
	}}
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

// An apply request is told applied by the digests the object carries: the
// request's, recorded with the object, and that of the fields its manager
// owns, which the cache keeps in place of managedFields.
func TestApplyRequest(t *testing.T) {
	req, err := NewApplyRequest(service(nil))
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewApplyRequest(service(map[string]string{AppliedAnnotation: "anything"}))
	if err != nil || again.digest != req.digest {
		t.Fatalf("digest with the annotation set: got %s %v, want %s (the annotation is not part of it)", again.digest, err, req.digest)
	}
	other, _ := NewApplyRequest(service(map[string]string{"note": "x"}))
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
	if _, ok := service(nil).GetAnnotations()[AppliedAnnotation]; ok {
		t.Fatal("Object changed the request's object")
	}

	cached := func(annotations map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	owned := applied[len(req.digest)+1:]
	tests := []struct {
		name   string
		cached *corev1.Service
		want   bool
	}{
		{"as applied", cached(map[string]string{AppliedAnnotation: applied, ownedFieldsAnnotation: owned}), true},
		{"fields taken over or removed", cached(map[string]string{AppliedAnnotation: applied, ownedFieldsAnnotation: "0123"}), false},
		{"another request applied", cached(map[string]string{AppliedAnnotation: other.digest + "." + owned, ownedFieldsAnnotation: owned}), false},
		{"no apply of ours", cached(map[string]string{AppliedAnnotation: applied}), false},
		{"never applied", cached(nil), false},
	}
	for _, tt := range tests {
		if got := req.Applied(tt.cached); got != tt.want {
			t.Errorf("%s: Applied %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The cache keeps, of managedFields, the digest of FieldOwner's apply entry.
func TestKeepOwnedFields(t *testing.T) {
	ours := metav1.ManagedFieldsEntry{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}}
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
		{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}},
		ours,
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: entries}}
	if _, err := dropPodTemplate(d); err != nil {
		t.Fatal(err)
	}
	if d.ManagedFields != nil || d.Annotations[ownedFieldsAnnotation] != digest(ours.FieldsV1.Raw) {
		t.Fatalf("got managedFields %v annotations %v, want the digest of %s alone", d.ManagedFields, d.Annotations, ours.FieldsV1.Raw)
	}
	if _, err := dropPodTemplate(d); err != nil || d.Annotations[ownedFieldsAnnotation] != digest(ours.FieldsV1.Raw) {
		t.Fatalf("transformed twice: got %v %v, want the digest kept", d.Annotations, err)
	}
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{ManagedFields: entries[:2], Annotations: map[string]string{ownedFieldsAnnotation: "written by someone"}}}
	if _, err := digestService(s); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Annotations[ownedFieldsAnnotation]; ok || s.ManagedFields != nil {
		t.Fatalf("no apply of ours: got %v %v, want neither managedFields nor a digest", s.ManagedFields, s.Annotations)
	}
}
