package workload

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// Whether an apply would change anything, told from the cached object: an
// object applied by FieldOwner carries, in AppliedAnnotation, the digest
// of the apply request and the digest of the fields it sets; the cache
// keeps of FieldOwner's managedFields entry the digest of the fields its
// applies own now (cluster.OwnedFields). The object holds what a request
// applies when the request's digest is the one recorded and the fields
// FieldOwner owns are the ones the recorded apply set: a field someone
// else changed is theirs from then on, and a field removed is no one's, so
// either changes the owned fields' digest; values are not compared, so the
// API server's defaults and normal forms (a quantity's) never make an
// object look changed.

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

// requestDigest is the digest of the apply of obj, a Deployment,
// StatefulSet, Service or ConfigMap (typed, without AppliedAnnotation).
// Whether it is up to date needs only the digest; its apply configuration,
// with the fields it sets, is made only to be sent.
func requestDigest(obj client.Object) (string, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("apply request %s: %w", obj.GetName(), err)
	}
	return cluster.Digest(raw), nil
}

// applyConfig is the apply configuration of obj, whose request's digest is
// digest, with AppliedAnnotation.
func applyConfig(obj client.Object, digest string) (runtime.ApplyConfiguration, error) {
	obj = obj.DeepCopyObject().(client.Object)
	// Its value is not part of the fields.
	a := labels.Merge(obj.GetAnnotations(), map[string]string{AppliedAnnotation: ""})
	obj.SetAnnotations(a)
	config, err := cluster.ApplyConfiguration(obj)
	if err != nil {
		return nil, err
	}
	fields, err := fieldsOf(config)
	if err != nil {
		return nil, fmt.Errorf("fields of apply request %s: %w", obj.GetName(), err)
	}
	a[AppliedAnnotation] = digest + "." + fields
	return cluster.ApplyConfiguration(obj)
}

// upToDate tells whether cur, the cached object, holds what the request of
// digest applies.
func upToDate(cur client.Object, digest string) bool {
	owned := cluster.OwnedFields(cur)
	return owned != "" && cur.GetAnnotations()[AppliedAnnotation] == digest+"."+owned
}

// fieldsOf is the digest of the fields config sets, as the API server
// records them for its field manager.
func fieldsOf(config runtime.ApplyConfiguration) (string, error) {
	raw, err := json.Marshal(config)
	if err != nil {
		return "", err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return "", err
	}
	tv, err := typeConverter().ObjectToTyped(u)
	if err != nil {
		return "", err
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		return "", err
	}
	fields, err := set.Difference(stripped).ToJSON()
	if err != nil {
		return "", err
	}
	return cluster.Digest(fields), nil
}
