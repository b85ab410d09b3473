package cluster

import (
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// The one cache: the gateway reads cluster objects from the controller-runtime
// Manager's cache (the one the controllers read), whose options CacheOptions
// gives. Each kind is cached as small as its readers allow:
//   - Validators twice over one GVK: typed (v1alpha1.Validator, what the
//     controllers and release 1.11 read) and, for release 2.0, which
//     returns them as stored, as their encoding (viewObject: bytes, no
//     decoded object); typed decoding would lose what the typed fields do
//     not hold (zero values, foreign fields), so one cannot be derived from
//     the other;
//   - Applications: their encoding only;
//   - Secrets: metadata (no annotations, which may quote a value:
//     kubectl's last-applied-configuration) and the keys of data, no value;
//   - everything else: without managedFields.

// Scheme holds the kinds the gateway and the controllers read: client-go's
// and the Validator's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// ValidatorGVK and ApplicationGVK are the kinds of the custom resources.
var (
	ValidatorGVK   = schema.GroupVersionKind{Group: Group, Version: Version, Kind: Kind}
	ApplicationGVK = schema.GroupVersionKind{Group: Group, Version: Version, Kind: ApplicationKind}
)

func unstructuredOf(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// CacheOptions are the options of the Manager's cache: objects of
// namespace only ("": of every namespace), each kind trimmed to what its readers read; resync
// re-delivers every cached object this often (0: controller-runtime's
// default), which is how controllers see changes no event announces.
func CacheOptions(namespace string, resync time.Duration) ctrlcache.Options {
	o := ctrlcache.Options{
		DefaultNamespaces: map[string]ctrlcache.Config{namespace: {}},
		DefaultTransform:  ctrlcache.TransformStripManagedFields(),
		ByObject: map[client.Object]ctrlcache.ByObject{
			&v1alpha1.Validator{}:          {Transform: transformValidator},
			unstructuredOf(ApplicationGVK): {Transform: encodeView},
			&corev1.Secret{}:               {Transform: trimSecret},
			&batchv1.CronJob{}:             {Transform: ctrlcache.TransformStripManagedFields()},
		},
	}
	if namespace == "" {
		o.DefaultNamespaces = nil
	}
	if resync > 0 {
		o.SyncPeriod = &resync
	}
	return o
}

// transformValidator is the transform of both Validator informers (one
// per GVK in controller-runtime): the typed one keeps the object without
// managedFields, the unstructured one (release 2.0's) its encoding.
func transformValidator(obj any) (any, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return encodeView(obj)
	}
	return ctrlcache.TransformStripManagedFields()(obj)
}

var _ toolscache.TransformFunc = transformValidator

// trimSecret keeps of a Secret what its readers read: name, namespace,
// resourceVersion, labels, owners, type and the keys of its data (nil
// values). The values never reach the cache; the few reads that need one
// go to the API server.
func trimSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	t := &corev1.Secret{Type: s.Type}
	t.Name, t.Namespace, t.ResourceVersion, t.UID = strings.Clone(s.Name), strings.Clone(s.Namespace), strings.Clone(s.ResourceVersion), s.UID
	t.Labels, t.OwnerReferences, t.DeletionTimestamp = s.Labels, s.OwnerReferences, s.DeletionTimestamp
	if len(s.Data) > 0 {
		t.Data = make(map[string][]byte, len(s.Data))
		for k := range s.Data {
			t.Data[strings.Clone(k)] = nil
		}
	}
	return t, nil
}
