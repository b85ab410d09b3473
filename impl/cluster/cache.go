package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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
//   - Validators once, as their encoding (viewObject: release 2.0 returns
//     them as stored, which a typed object cannot reproduce: zero values,
//     quantities as written), with the metadata predicates read; readers
//     of the typed Validator decode it (validators.go);
//   - Applications: their encoding only;
//   - Secrets as records (SecretRecord): key, owners, the validator and the
//     keys of data, no value and no annotation (kubectl's
//     last-applied-configuration may quote a value);
//   - CronJobs as records (CronJobRecord): metadata and, in place of the
//     spec, a digest of the fields the gateway sets (cronJobDigest), which
//     is what it compares;
//   - Pods, PersistentVolumeClaims, Deployments, StatefulSets and Services
//     as records of what the workload controller reads (trim.go:
//     PodRecord, ClaimRecord, WorkloadRecord): no spec, and for the
//     workloads, in place of their managedFields, the digest of the fields
//     the workload controller applied (applied.go), which it compares
//     before it applies again;
//   - Jobs as the few fields the runs controller reads: no spec;
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
	// The transforms are set per namespace: a ByObject transform without
	// its namespaces would lose to the DefaultNamespaces' defaulted one.
	in := func(t toolscache.TransformFunc) ctrlcache.ByObject {
		return ctrlcache.ByObject{Namespaces: map[string]ctrlcache.Config{namespace: {Transform: t}}}
	}
	o := ctrlcache.Options{
		DefaultNamespaces: map[string]ctrlcache.Config{namespace: {}},
		DefaultTransform:  ctrlcache.TransformStripManagedFields(),
		ByObject: map[client.Object]ctrlcache.ByObject{
			unstructuredOf(ValidatorGVK):   in(encodeView),
			unstructuredOf(ApplicationGVK): in(encodeView),
			&corev1.Secret{}:               in(recordSecret),
			&batchv1.CronJob{}:             in(recordCronJob),
			&appsv1.Deployment{}:           in(recordWorkload),
			&appsv1.StatefulSet{}:          in(recordWorkload),
			&corev1.Service{}:              in(recordWorkload),
		},
	}
	o.ByObject[&corev1.Pod{}] = in(trimPod)
	o.ByObject[&corev1.PersistentVolumeClaim{}] = in(recordClaim)
	o.ByObject[&batchv1.Job{}] = in(trimJob)
	if resync > 0 {
		o.SyncPeriod = &resync
	}
	return o
}

// backupShape is the backup CronJob's spec as the gateway writes it, as a
// JSON value: the fields whose values cronJobDigest covers.
var backupShape, _ = jsonValue(backupCronJob(backupTarget{cron: "0 3 * * *", maxBackups: 1, databaseUser: "u"}).Spec)

// cronJobDigest is a digest of the fields of spec the gateway sets (the
// API server's defaults aside): equal digests, equal backup CronJobs.
func cronJobDigest(spec batchv1.CronJobSpec) (string, error) {
	v, err := jsonValue(spec)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(project(v, backupShape))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16]), nil
}

// project is the part of the JSON value v that shape has: maps keep the
// keys shape has, lists keep their length and project each element on
// shape's element at the same place (the last one past its end).
func project(v, shape any) any {
	switch s := shape.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(s))
		for k, sv := range s {
			if mv, ok := m[k]; ok {
				out[k] = project(mv, sv)
			}
		}
		return out
	case []any:
		l, ok := v.([]any)
		if !ok || len(s) == 0 {
			return v
		}
		out := make([]any, len(l))
		for i := range l {
			out[i] = project(l[i], s[min(i, len(s)-1)])
		}
		return out
	}
	return v
}
