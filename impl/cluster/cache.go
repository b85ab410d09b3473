package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// Scheme holds the kinds the gateway and the controllers read.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	b := runtime.NewSchemeBuilder(clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	return s, b.AddToScheme(s)
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

// Resync is how often the cache hands every Validator and Job to the
// controllers again, so that an object whose event was missed (a reconcile
// in a long backoff) converges within a minute, two jittered periods, of
// the fault clearing; a validator in step costs reads, no write.
const Resync = 25 * time.Second

// CacheOptions are the options of the Manager's cache, every reader's: of
// namespace ("": all), without what no reader reads; Validators and Jobs
// resync every Resync, the other kinds every resync (0: the default).
func CacheOptions(namespace string, resync time.Duration) ctrlcache.Options {
	// A ByObject transform names its namespaces: without them it would lose
	// to the DefaultNamespaces' defaulted one.
	in := func(t toolscache.TransformFunc, period *time.Duration) ctrlcache.ByObject {
		return ctrlcache.ByObject{Namespaces: map[string]ctrlcache.Config{namespace: {SyncPeriod: period, Transform: interned(t)}}}
	}
	o := ctrlcache.Options{
		DefaultNamespaces: map[string]ctrlcache.Config{namespace: {}},
		DefaultTransform:  interned(ctrlcache.TransformStripManagedFields()),
		ByObject: map[client.Object]ctrlcache.ByObject{
			&corev1.Secret{}:      in(secretKeys, nil),
			&corev1.Pod{}:         in(podStatus, nil),
			&appsv1.Deployment{}:  in(appliedShape, nil),
			&appsv1.StatefulSet{}: in(appliedShape, nil),
			&corev1.Service{}:     in(appliedShape, nil),
			&corev1.ConfigMap{}:   in(appliedShape, nil),
			&v1alpha1.Validator{}: in(secretRefsEntry, ptr.To(Resync)),
			&batchv1.Job{}:        in(ctrlcache.TransformStripManagedFields(), ptr.To(Resync)),
		},
	}
	if resync > 0 {
		o.SyncPeriod = &resync
	}
	return o
}

// ReleaseCache widens o, CacheOptions's for namespace, to the workload
// kinds of every namespace labelled ValidatorNamespaceLabel=namespace (chart
// mode's release namespaces): still one informer per kind.
func ReleaseCache(o *ctrlcache.Options, namespace string) error {
	// Another server in the cluster labels its own.
	labelled, err := labels.Parse(ValidatorNamespaceLabel + "=" + namespace)
	if err != nil {
		return err
	}
	for _, kind := range []client.Object{
		&appsv1.Deployment{}, &appsv1.StatefulSet{}, &corev1.Service{}, &corev1.PersistentVolumeClaim{},
		&corev1.Pod{}, &corev1.Secret{}, &corev1.ConfigMap{},
	} {
		key, by := client.Object(kind), ctrlcache.ByObject{}
		for obj, b := range o.ByObject {
			if reflect.TypeOf(obj) == reflect.TypeOf(kind) {
				key, by = obj, b
			}
		}
		here := by.Namespaces[namespace]
		elsewhere := here
		elsewhere.LabelSelector = labelled
		by.Namespaces = map[string]ctrlcache.Config{namespace: here, ctrlcache.AllNamespaces: elsewhere}
		o.ByObject[key] = by
	}
	return nil
}

// interned is t, then the metadata strings many cached objects share made
// the process's one copy: decoding allocates each anew for every object.
func interned(t toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		obj, err := t(obj)
		if err != nil {
			return obj, err
		}
		if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
			if m, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
				internMeta(m)
			}
		}
		switch w := obj.(type) {
		case *appsv1.Deployment:
			internMeta(&w.Spec.Template.ObjectMeta)
		case *appsv1.StatefulSet:
			internMeta(&w.Spec.Template.ObjectMeta)
		}
		return obj, nil
	}
}

// sharedLabels are the labels whose values many objects share; others' (a
// Pod's name, a template hash) would only grow the interned strings.
var sharedLabels = map[string]bool{
	ManagedByLabel: true, ValidatorLabel: true, ValidatorNamespaceLabel: true, InstallationLabel: true,
	ComponentLabel: true, InstanceLabel: true, "app.kubernetes.io/name": true, "app.kubernetes.io/part-of": true,
	"app.kubernetes.io/version": true, "app": true, "migration": true, "helm.sh/chart": true,
}

func internMeta(m *metav1.ObjectMeta) {
	m.Namespace = intern(m.Namespace)
	m.Labels = internKeys(m.Labels, func(k, v string) string {
		if sharedLabels[k] {
			return intern(v)
		}
		return v
	})
	m.Annotations = internKeys(m.Annotations, func(_, v string) string { return v })
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind = intern(r.APIVersion), intern(r.Kind)
	}
	for i := range m.ManagedFields {
		e := &m.ManagedFields[i]
		e.Manager, e.APIVersion, e.FieldsType = intern(e.Manager), intern(e.APIVersion), intern(e.FieldsType)
	}
}

// internedStrings holds the interned strings for the process's life:
// unique.Make would let one go at the next collection, unshared after.
var internedStrings sync.Map

func intern(s string) string {
	if v, ok := internedStrings.Load(s); ok {
		return v.(string)
	}
	s = strings.Clone(s) // not a part of a larger decoded buffer
	v, _ := internedStrings.LoadOrStore(s, s)
	return v.(string)
}

// internKeys is a new map of m's size (assigning to a full small map's key
// grows it first) with interned keys and value's values.
func internKeys(m map[string]string, value func(k, v string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = value(k, v)
	}
	return out
}

// secretKeys is the transform of Secrets: keys without values, and no
// annotations (kubectl's last-applied-configuration may quote a value).
func secretKeys(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	s.ManagedFields, s.Annotations = nil, nil
	for k := range s.Data {
		s.Data[k] = []byte{}
	}
	return s, nil
}

// secretRefsEntry, the Validators' transform, keeps only secretRefsOwner's entry (refsOwned).
func secretRefsEntry(obj any) (any, error) {
	v, ok := obj.(*v1alpha1.Validator)
	if !ok {
		return obj, nil
	}
	v.ManagedFields = slices.DeleteFunc(v.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return !AppliedBy(e, secretRefsOwner) })
	return v, nil
}

// AppliedBy tells whether e is manager's apply entry of the object itself, not a subresource.
func AppliedBy(e metav1.ManagedFieldsEntry, manager string) bool {
	return e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// podStatus is the transform of Pods: their metadata and why they cannot
// start; the rest, some 9 KB a Pod, nothing reads from the cache.
func podStatus(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName}
	p.Status = corev1.PodStatus{
		Phase: p.Status.Phase, Conditions: p.Status.Conditions, Reason: p.Status.Reason, Message: p.Status.Message,
		InitContainerStatuses: containerStates(p.Status.InitContainerStatuses),
		ContainerStatuses:     containerStates(p.Status.ContainerStatuses),
	}
	return p, nil
}

func containerStates(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range in {
		out = append(out, corev1.ContainerStatus{Name: c.Name, State: c.State, Ready: c.Ready, RestartCount: c.RestartCount})
	}
	return out
}

// appliedShape is the transform of what the workload controller applies: it
// compares by AppliedAnnotation and OwnedFields, and never reads pod specs.
func appliedShape(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	var own []metav1.ManagedFieldsEntry
	for _, e := range o.GetManagedFields() {
		if !AppliedBy(e, FieldOwner) || e.FieldsV1 == nil {
			continue
		}
		// A field set is a JSON object; a digest (the transform may see an
		// object it made) is not.
		if raw := e.FieldsV1.Raw; len(raw) > 0 && raw[0] == '{' {
			e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(Digest(raw))}
		}
		own = append(own, e)
	}
	o.SetManagedFields(own)
	switch w := o.(type) {
	case *appsv1.Deployment:
		w.Spec = appsv1.DeploymentSpec{Replicas: w.Spec.Replicas, Template: corev1.PodTemplateSpec{ObjectMeta: w.Spec.Template.ObjectMeta}}
	case *appsv1.StatefulSet:
		w.Spec = appsv1.StatefulSetSpec{Replicas: w.Spec.Replicas, Template: corev1.PodTemplateSpec{ObjectMeta: w.Spec.Template.ObjectMeta},
			VolumeClaimTemplates: w.Spec.VolumeClaimTemplates}
	}
	return o, nil
}

// OwnedFields is the digest of the fields FieldOwner's applies own (appliedShape); "": none.
func OwnedFields(o client.Object) string {
	for _, e := range o.GetManagedFields() {
		if AppliedBy(e, FieldOwner) && e.FieldsV1 != nil {
			return string(e.FieldsV1.Raw)
		}
	}
	return ""
}

// Digest is a short digest of raw: the first half of its SHA-256, in hex.
func Digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}
