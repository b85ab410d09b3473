package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Whether an apply would change anything, told from the cache without
// keeping what was applied: an object applied by FieldOwner carries, in
// AppliedAnnotation, the digest of the apply request and the digest of the
// fields it sets (the managedFields entry the API server records for the
// apply); the cache keeps, in place of the object's managedFields, the
// digest of the entry the object has now (WorkloadRecord.Owned). The
// object holds what a request applies when the request's digest is the one
// recorded and the fields FieldOwner owns are the ones the recorded apply
// set: a field someone else changed is theirs from then on, and a field
// removed is no one's, so either changes the owned fields' digest; values
// are not compared, so the API server's defaults and normal forms (a
// quantity's, a claim template's status) never make an object look changed.

// AppliedAnnotation is where FieldOwner records what it applied to an
// object: "<digest of the apply request>.<digest of the fields it sets>".
const AppliedAnnotation = "validator-manager.io/applied"

// typeConverter knows the schema of client-go's kinds (which lists are
// maps, by which keys), parsed once, on first use.
var typeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// stripped are the fields the API server never records as a manager's:
// its field manager strips them from the fields an apply sets.
var stripped = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// ApplyRequest is an apply request of FieldOwner and what tells whether it
// would change anything.
type ApplyRequest struct {
	obj       client.Object
	toRequest func(client.Object) (*unstructured.Unstructured, error)
	digest    string
}

// NewApplyRequest is the request that applies obj (an object of client-go's
// kinds, typed, without AppliedAnnotation), as toRequest makes it into one
// (its kind set, no status). Its digest is obj's: computed without
// converting obj, which only an apply needs.
func NewApplyRequest(obj client.Object, toRequest func(client.Object) (*unstructured.Unstructured, error)) (ApplyRequest, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return ApplyRequest{}, fmt.Errorf("apply request %s: %w", obj.GetName(), err)
	}
	return ApplyRequest{obj: obj, toRequest: toRequest, digest: digest(raw)}, nil
}

// Applied tells whether cached (the object's record) already holds what r
// applies.
func (r ApplyRequest) Applied(cached *WorkloadRecord) bool {
	return cached.Owned != "" && cached.Applied == r.digest+"."+cached.Owned
}

// Object is the request to send, with AppliedAnnotation.
func (r ApplyRequest) Object() (*unstructured.Unstructured, error) {
	obj, err := r.toRequest(r.obj)
	if err != nil {
		return nil, err
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AppliedAnnotation] = "" // its value is not part of the fields
	obj.SetAnnotations(a)
	tv, err := typeConverter().ObjectToTyped(obj)
	if err != nil {
		return nil, fmt.Errorf("apply request %s as typed: %w", obj.GetName(), err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		return nil, fmt.Errorf("fields of apply request %s: %w", obj.GetName(), err)
	}
	raw, err := set.Difference(stripped).ToJSON()
	if err != nil {
		return nil, err
	}
	a[AppliedAnnotation] = r.digest + "." + digest(raw)
	obj.SetAnnotations(a)
	return obj, nil
}

// ownedFields is the digest of the fields FieldOwner's applies own, of an
// object's managedFields: "" when it has none.
func ownedFields(mf []metav1.ManagedFieldsEntry) string {
	for _, e := range mf {
		if e.Manager == FieldOwner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" && e.FieldsV1 != nil {
			return digest(e.FieldsV1.Raw)
		}
	}
	return ""
}

func digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}
