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
// digest of the entry the object has now (ownedFieldsAnnotation). The
// object holds what a request applies when the request's digest is the one
// recorded and the fields FieldOwner owns are the ones the recorded apply
// set: a field someone else changed is theirs from then on, and a field
// removed is no one's, so either changes the owned fields' digest; values
// are not compared, so the API server's defaults and normal forms (a
// quantity's, a claim template's status) never make an object look changed.

// AppliedAnnotation is where FieldOwner records what it applied to an
// object: "<digest of the apply request>.<digest of the fields it sets>".
const AppliedAnnotation = "validator-manager.io/applied"

// ownedFieldsAnnotation is where a cached object carries the digest of the
// managedFields entry of FieldOwner's applies; the API server never holds
// it.
const ownedFieldsAnnotation = "validator-manager.io/cached-owned-fields"

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

// ApplyRequest is an apply request of FieldOwner (an object of client-go's
// kinds, its kind set, no status) and what tells whether it would change
// anything.
type ApplyRequest struct {
	obj    *unstructured.Unstructured
	digest string
}

// NewApplyRequest is the request that applies obj. obj is not changed.
func NewApplyRequest(obj *unstructured.Unstructured) (ApplyRequest, error) {
	a := obj.GetAnnotations()
	if _, ok := a[AppliedAnnotation]; ok {
		obj = obj.DeepCopy()
		delete(a, AppliedAnnotation)
		if len(a) == 0 {
			a = nil
		}
		obj.SetAnnotations(a)
	}
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return ApplyRequest{}, fmt.Errorf("apply request %s: %w", obj.GetName(), err)
	}
	return ApplyRequest{obj: obj, digest: digest(raw)}, nil
}

// Applied tells whether cached (the object as the cache holds it) already
// holds what r applies.
func (r ApplyRequest) Applied(cached client.Object) bool {
	a := cached.GetAnnotations()
	owned := a[ownedFieldsAnnotation]
	return owned != "" && a[AppliedAnnotation] == r.digest+"."+owned
}

// Object is the request to send: r's object with AppliedAnnotation.
func (r ApplyRequest) Object() (*unstructured.Unstructured, error) {
	obj := r.obj.DeepCopy()
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

// keepOwnedFields replaces obj's managedFields with the digest of
// FieldOwner's apply entry in ownedFieldsAnnotation (none when it has
// none). An object without managedFields (transformed already) is left as
// it is.
func keepOwnedFields(obj client.Object) {
	mf := obj.GetManagedFields()
	if mf == nil {
		return
	}
	owned := ""
	for _, e := range mf {
		if e.Manager == FieldOwner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" && e.FieldsV1 != nil {
			owned = digest(e.FieldsV1.Raw)
			break
		}
	}
	obj.SetManagedFields(nil)
	a := obj.GetAnnotations()
	switch {
	case owned != "":
		if a == nil {
			a = make(map[string]string, 1)
		}
		a[ownedFieldsAnnotation] = owned
		obj.SetAnnotations(a)
	case a[ownedFieldsAnnotation] != "":
		delete(a, ownedFieldsAnnotation) // someone wrote it: it is not ours
	}
}

func digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}
