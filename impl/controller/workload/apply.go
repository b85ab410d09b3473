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

// AppliedAnnotation records what FieldOwner applied: "<digest of the
// request>.<digest of the fields it sets>". The object is up to date while
// the fields FieldOwner owns (cluster.OwnedFields) are still those: a field
// changed or removed by hand changes them. Values are not compared, so the
// API server's defaults and normal forms never make an object look changed.
const AppliedAnnotation = "validator-manager.io/applied"

// typeConverter knows the schema of client-go's kinds, parsed on first use.
var typeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// stripped are the fields the API server never records as a manager's.
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

// requestDigest is the digest of the apply of obj; the apply configuration
// is made only when it is sent.
func requestDigest(obj client.Object) (string, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("apply request %s: %w", obj.GetName(), err)
	}
	return cluster.Digest(raw), nil
}

// applyConfig is the apply configuration of obj with AppliedAnnotation.
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

func upToDate(cur client.Object, digest string) bool {
	owned := cluster.OwnedFields(cur)
	return owned != "" && cur.GetAnnotations()[AppliedAnnotation] == digest+"."+owned
}

// fieldsOf is the digest of the fields config sets, as the API server
// records them.
func fieldsOf(config runtime.ApplyConfiguration) (string, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(config)
	if err != nil {
		return "", err
	}
	tv, err := typeConverter().ObjectToTyped(&unstructured.Unstructured{Object: u})
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
