package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	metricsv1beta1 "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/utils/ptr"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"

	validatorac "github.com/validator-manager/validator-manager/gen/applyconfiguration/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/schedule"
)

// KubeOptions tune the client-go gateway; zero values take the defaults.
type KubeOptions struct {
	// Instance labels the gateway's Validators (InstallationLabel), the
	// only ones it manages; empty: every managed resource.
	Instance string
	// Metrics reads pod metrics (the node simulator's); nil: the cluster's metrics.k8s.io.
	Metrics metricsv1beta1.PodMetricsesGetter
}

// The backup Jobs' image (it needs sh, pg_dumpall and gzip) and a new backup PVC's size.
const (
	DefaultBackupImage   = "postgres:16"
	DefaultBackupStorage = "10Gi"
)

// Field owners: forced applies (spec, labels, CronJob, Secret values given);
// spec.secrets; and defaults, unforced so they never replace another's value.
const (
	FieldOwner         = "validator-manager"
	secretRefsOwner    = "validator-manager-secret-refs"
	secretDefaultOwner = "validator-manager-defaults"
)

// Kube is the gateway to a Kubernetes cluster, in one namespace: reads from
// the Manager's cache, server-side applies skipped when the cache is in step.
type Kube struct {
	namespace    string
	core         kubernetes.Interface // pods (application metrics), /version
	client       client.Client        // writes
	api          client.Reader        // fresh reads
	cache        ctrlcache.Cache
	instance     string
	managed      labels.Selector
	applications atomic.Bool         // the cluster serves the Application resource
	deleted      []func(name string) // OnValidatorDeleted's
	synced       atomic.Bool
	ready        chan struct{} // closed once synced is set
	// informers are Start's, by their name in the operational metrics.
	informers   atomic.Pointer[map[string]ctrlcache.Informer]
	passwordKey atomic.Pointer[[]byte] // once read: it is never replaced
	began       atomic.Int64           // Start's first call, Unix nanoseconds
	metrics     metricsv1beta1.PodMetricsesGetter
}

// RESTConfig builds the client configuration for cluster mode "kubeconfig"
// (empty kubeconfig: $KUBECONFIG or ~/.kube/config) or "in-cluster".
func RESTConfig(mode, kubeconfig string) (*rest.Config, error) {
	var (
		cfg *rest.Config
		err error
	)
	switch mode {
	case "kubeconfig":
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	case "in-cluster":
		cfg, err = rest.InClusterConfig()
	default:
		return nil, fmt.Errorf("cluster: mode %q is not one of kubeconfig, in-cluster", mode)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %s configuration: %w", mode, err)
	}
	cfg.UserAgent = "validator-manager"
	return cfg, nil
}

// NewKube builds the gateway over c, the Manager whose cache CacheOptions built.
func NewKube(c ctrlcluster.Cluster, namespace string, opts KubeOptions) (*Kube, error) {
	if namespace == "" {
		return nil, fmt.Errorf("cluster: namespace must not be empty")
	}
	core, err := kubernetes.NewForConfig(c.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if opts.Metrics == nil {
		mc, err := metricsclient.NewForConfig(c.GetConfig())
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		opts.Metrics = mc.MetricsV1beta1()
	}
	// Read-your-writes: a Validator just created owns the Secrets written next.
	cl, err := client.New(c.GetConfig(), client.Options{
		HTTPClient: c.GetHTTPClient(), Scheme: c.GetScheme(), Mapper: c.GetRESTMapper(),
		Cache: &client.CacheOptions{Reader: c.GetCache(), EnableReadYourWritesConsistency: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	k := &Kube{namespace: namespace, core: core, client: cl, api: c.GetAPIReader(), cache: c.GetCache(),
		instance: opts.Instance, metrics: opts.Metrics, ready: make(chan struct{})}
	selector := managedSelector
	if k.instance != "" {
		selector += "," + InstallationLabel + "=" + k.instance
	}
	if k.managed, err = labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("cluster: installation %q: %w", k.instance, err)
	}
	return k, nil
}

// Start asks the Manager's cache for the gateway's informers and waits for
// it to sync; it fails fast when the Validator CRD is not served.
func (k *Kube) Start(ctx context.Context) error {
	k.began.CompareAndSwap(0, time.Now().UnixNano())
	if validators, err := k.serves(ctx, ValidatorGVK); !validators {
		if err != nil {
			return translate("list validators", err)
		}
		return domain.Unavailable("cluster: the Validator resource (%s) is not served; apply deploy/crds", ValidatorResource.GroupResource())
	}
	applications, err := k.serves(ctx, ApplicationGVK)
	if err != nil {
		return translate("list applications", err)
	}
	k.applications.Store(applications)
	kinds := map[string]client.Object{"validators": &v1alpha1.Validator{}, "secrets": &corev1.Secret{}, "cronjobs": &batchv1.CronJob{}}
	if applications {
		kinds["applications"] = unstructuredOf(ApplicationGVK)
	}
	informers := make(map[string]ctrlcache.Informer, len(kinds))
	for name, obj := range kinds {
		inf, err := k.cache.GetInformer(ctx, obj, ctrlcache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("cluster: %T informer: %w", obj, err)
		}
		informers[name] = inf
	}
	k.informers.Store(&informers)
	if !k.synced.Load() { // once
		if err := k.notifyDeleted(ctx); err != nil {
			return err
		}
	}
	if !k.cache.WaitForCacheSync(ctx) {
		return domain.Unavailable("cluster: the validator cache did not sync: %v", ctx.Err())
	}
	if !k.synced.Swap(true) {
		close(k.ready)
	}
	return nil
}

// WaitForSync waits until Start has seen the cache synced; false when ctx ends first.
func (k *Kube) WaitForSync(ctx context.Context) bool {
	select {
	case <-k.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// serves tells whether the API server serves gvk in the namespace: false,
// without an error, when a list fails because the kind is not served.
func (k *Kube) serves(ctx context.Context, gvk schema.GroupVersionKind) (bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := k.api.List(ctx, list, client.InNamespace(k.namespace), client.Limit(1))
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err), discovery.IsGroupDiscoveryFailedError(err):
		return false, nil
	}
	return false, err
}

// Manages tells whether this installation manages a Validator with labels l.
func (k *Kube) Manages(l map[string]string) bool { return k.managed.Matches(labels.Set(l)) }

// SecretValidator names the managed validator a Secret belongs to (its
// ValidatorLabel, else its name's convention), "" for any other Secret.
func (k *Kube) SecretValidator(s metav1.Object) string {
	name := cmp.Or(s.GetLabels()[ValidatorLabel], slotOf(s.GetName()))
	if name == "" || k.cachedValidator(name) == nil {
		return ""
	}
	return name
}

// CheckReferences fails with domain.Invalid naming the field of the first
// object that does not exist: Secrets, then Secret keys, then StorageClasses.
func (k *Kube) CheckReferences(ctx context.Context, refs domain.References) (err error) {
	defer func() { err = translate("check references", err) }()
	secrets := map[string]*corev1.Secret{} // nil value: absent
	secret := func(name string) (*corev1.Secret, error) {
		if s, read := secrets[name]; read {
			return s, nil
		}
		s, err := k.core.CoreV1().Secrets(k.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s, err = nil, nil
		}
		if err != nil {
			return nil, redact(err)
		}
		secrets[name] = s
		return s, nil
	}
	for _, r := range refs.Secrets {
		switch s, err := secret(r.Name); {
		case err != nil:
			return err
		case s == nil:
			return domain.Invalid(r.Field, "secret %q does not exist in namespace %q", r.Name, k.namespace)
		}
	}
	for _, r := range refs.SecretKeys {
		switch s, err := secret(r.Name); {
		case err != nil:
			return err
		case r.Optional:
		case s == nil:
			return domain.Invalid(r.Field, "secret %q does not exist in namespace %q", r.Name, k.namespace)
		case !hasKey(s, r.Key):
			return domain.Invalid(r.Field, "secret %q has no key %q", r.Name, r.Key)
		}
	}
	for _, r := range refs.StorageClasses {
		_, err := k.core.StorageV1().StorageClasses().Get(ctx, r.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return domain.Invalid(r.Field, "storage class %q does not exist", r.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// hasKey tells whether s, as read (stringData merged into data), has key.
func hasKey(s *corev1.Secret, key string) bool {
	_, ok := s.Data[key]
	return ok
}

// noCopy reads a cached object without copying it: read it, never change it.
var noCopy = &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}

// apply applies obj as FieldOwner, forced, or as secretDefaultOwner. The
// API server's errors may quote what was sent: callers of secrets redact.
func (k *Kube) apply(ctx context.Context, obj client.Object, force bool) error {
	config, err := ApplyConfiguration(obj)
	if err != nil {
		return err
	}
	if !force {
		return k.client.Apply(ctx, config, client.FieldOwner(secretDefaultOwner))
	}
	return k.client.Apply(ctx, config, client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// ApplyConfiguration is obj as the client-go apply configuration of its
// kind: its type, metadata and spec or data; an apply claims no status.
func ApplyConfiguration(obj client.Object) (runtime.ApplyConfiguration, error) {
	var config runtime.ApplyConfiguration
	switch obj.(type) {
	case *appsv1.Deployment:
		config = &appsv1ac.DeploymentApplyConfiguration{}
	case *appsv1.StatefulSet:
		config = &appsv1ac.StatefulSetApplyConfiguration{}
	case *corev1.Service:
		config = &corev1ac.ServiceApplyConfiguration{}
	case *corev1.ConfigMap:
		config = &corev1ac.ConfigMapApplyConfiguration{}
	case *corev1.Secret:
		config = &corev1ac.SecretApplyConfiguration{}
	case *batchv1.CronJob:
		config = &batchv1ac.CronJobApplyConfiguration{}
	default:
		return nil, fmt.Errorf("no apply configuration for %T", obj)
	}
	err := convert(obj, config)
	switch c := config.(type) {
	case *appsv1ac.DeploymentApplyConfiguration:
		c.Status = nil
	case *appsv1ac.StatefulSetApplyConfiguration:
		c.Status = nil
		if c.Spec != nil {
			for i := range c.Spec.VolumeClaimTemplates {
				c.Spec.VolumeClaimTemplates[i].Status = nil
			}
		}
	case *corev1ac.ServiceApplyConfiguration:
		c.Status = nil
	case *batchv1ac.CronJobApplyConfiguration:
		c.Status = nil
	}
	return config, err
}

// covers tells whether JSON value actual holds every field of desired; a
// field only actual has must pass extra (the API server's defaults), one
// only desired has must be zero (the encoding omits it).
func covers(desired, actual any, extra func(any) bool) bool {
	switch d := desired.(type) {
	case map[string]any:
		a, ok := actual.(map[string]any)
		if !ok {
			return len(d) == 0 && actual == nil
		}
		for key, dv := range d {
			av, ok := a[key]
			if !ok && isZero(dv) {
				continue
			}
			if !ok || !covers(dv, av, extra) {
				return false
			}
		}
		for key, av := range a {
			if _, ok := d[key]; !ok && !extra(av) {
				return false
			}
		}
		return true
	case []any:
		a, ok := actual.([]any)
		if !ok || len(a) != len(d) {
			return false
		}
		for i := range d {
			if !covers(d[i], a[i], extra) {
				return false
			}
		}
		return true
	}
	return desired == actual
}

func jsonCovers(desired, actual any, extra func(any) bool) bool {
	var d, a any
	return convert(desired, &d) == nil && convert(actual, &a) == nil && covers(d, a, extra)
}

// isZero allows the defaults of the Validator's schema: empty strings,
// false, zero, null and empty maps and lists.
func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case float64:
		return t == 0
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// cached is the cache's object of type T and that name, nil when the cache
// is not synced or has none; shared: read it, never change it. It waits up
// to cacheLag for this gateway's write (not of chart mode's Secrets:
// read-your-writes does not follow a kind over two namespace entries).
func cached[T any, P interface {
	*T
	client.Object
}](ctx context.Context, k *Kube, name string) P {
	if !k.synced.Load() {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, cacheLag)
	defer cancel()
	obj, key := P(new(T)), types.NamespacedName{Namespace: k.namespace, Name: name}
	err := k.client.Get(wait, key, obj, noCopy)
	if err != nil && !apierrors.IsNotFound(err) {
		err = k.client.Get(ctx, key, obj, noCopy, client.DisableReadYourWritesConsistency)
	}
	if err != nil {
		return nil
	}
	return obj
}

// cacheLag bounds cached's wait for the cache to hold a write.
const cacheLag = 10 * time.Second

// validatorInStep tells from the cache whether the Validator has the spec and labels to apply.
func (k *Kube) validatorInStep(ctx context.Context, name string, spec *validatorac.ValidatorSpecApplyConfiguration) bool {
	cur := cached[v1alpha1.Validator](ctx, k, name)
	if cur == nil || !labels.SelectorFromSet(k.validatorLabels(name)).Matches(labels.Set(cur.Labels)) {
		return false
	}
	have := cur.Spec // a copy: the cache's object is shared
	have.Secrets = nil
	return jsonCovers(spec, have, isZero)
}

// ApplyValidator makes the Validator resource's spec (but spec.secrets) and
// labels what v and prune (nil: none) say, unless the cache shows them. A
// new resource references the Secrets that exist and those writes names
// from its first generation, so its workloads are made once, not again.
func (k *Kube) ApplyValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule, writes domain.WrittenSecrets) (err error) {
	defer func() { err = translate(fmt.Sprintf("apply validator %q", v.Name), err) }()
	if v.Name == "" {
		return domain.Invalid("name", "must not be empty")
	}
	spec, err := validatorSpec(v, prune)
	if err != nil {
		return err
	}
	if k.validatorInStep(ctx, v.Name, spec) {
		return nil
	}
	cur := cached[v1alpha1.Validator](ctx, k, v.Name)
	existed := cur != nil
	var refs *secretRefsAC
	if existed && cur.Spec.Secrets != nil && !refsOwned(cur) {
		// A create killed before its take-over below left spec.secrets to
		// FieldOwner, and this apply would drop them: take them over first.
		held := &secretRefsAC{}
		if err := convert(cur.Spec.Secrets, held); err != nil {
			return err
		}
		if err := k.applySecretRefs(ctx, v.Name, held); err != nil {
			return err
		}
	}
	if !existed {
		// Secrets may outlive a resource deleted by hand: those there
		// are, and those written next.
		if refs = secretRefs(v.Name, k.referenced(ctx, v.Name, writes)); refs != nil {
			spec.WithSecrets(refs)
		}
	}
	ac := validatorac.Validator(v.Name, k.namespace).WithLabels(k.validatorLabels(v.Name)).WithSpec(spec)
	if err := k.client.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return err
	}
	if existed {
		return nil
	}
	if refs == nil || ac.Spec == nil || !jsonCovers(refs, ac.Spec.Secrets, isZero) {
		return nil // none, or a resource the cache was behind on, whose references secretRefsOwner holds
	}
	// secretRefsOwner takes the references over (no new generation), so
	// that the next apply of the spec, which leaves them out, keeps them.
	return k.applySecretRefs(ctx, v.Name, refs)
}

// applySecretRefs applies spec.secrets as secretRefsOwner (nil refs release them).
func (k *Kube) applySecretRefs(ctx context.Context, validator string, refs *secretRefsAC) error {
	spec := validatorac.ValidatorSpec()
	if refs != nil {
		spec.WithSecrets(refs)
	}
	return k.client.Apply(ctx, validatorac.Validator(validator, k.namespace).WithSpec(spec), client.FieldOwner(secretRefsOwner), client.ForceOwnership)
}

// refsOwned tells whether secretRefsOwner has applied to v (secretRefsEntry keeps it).
func refsOwned(v *v1alpha1.Validator) bool {
	return slices.ContainsFunc(v.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return AppliedBy(e, secretRefsOwner) })
}

func convert(from, to any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, to)
}

func (k *Kube) validatorLabels(validator string) map[string]string {
	l := labelsFor(validator)
	if k.instance != "" {
		l[InstallationLabel] = k.instance
	}
	return l
}

// cachedValidator is the cached validator this installation manages, shared; nil: none.
func (k *Kube) cachedValidator(name string) *v1alpha1.Validator {
	if v := cached[v1alpha1.Validator](context.Background(), k, name); v != nil && k.Manages(v.Labels) {
		return v
	}
	return nil
}

// referenced is the validator's Secrets that the cache holds, and those
// writes names; a read waits for the cache while ctx lasts (cached).
func (k *Kube) referenced(ctx context.Context, validator string, writes domain.WrittenSecrets) domain.WrittenSecrets {
	for _, s := range secretSlots(validator, domain.ValidatorSecrets{}) {
		if c := cached[corev1.Secret](ctx, k, s.name); c != nil && hasKey(c, s.key) {
			*s.flag(&writes) = true
		}
	}
	return writes
}

// referenceSecrets makes spec.secrets reference the validator's cached
// Secrets and those just written, unless the cached resource already does.
func (k *Kube) referenceSecrets(ctx context.Context, validator string, written domain.WrittenSecrets) error {
	refs := secretRefs(validator, k.referenced(ctx, validator, written))
	if cur := cached[v1alpha1.Validator](ctx, k, validator); cur != nil && jsonCovers(refs, cur.Spec.Secrets, isZero) {
		return nil
	}
	return k.applySecretRefs(ctx, validator, refs)
}

// PutSecrets writes the validator's Secrets, owned by its resource: a value
// given replaces, a default in d only fills in where the key is missing.
func (k *Kube) PutSecrets(ctx context.Context, validator string, given domain.ValidatorSecrets, d domain.SecretDefaults) (err error) {
	defer func() { err = translate(fmt.Sprintf("write secrets of validator %q", validator), err) }()
	defaults := map[string]*string{
		domain.LedgerAPIAuthSecretName(validator): d.LedgerAPIClientSecret,
		domain.DatabaseSecretName(validator):      d.DatabasePassword,
	}
	uid, err := k.validatorUID(ctx, validator)
	if err != nil {
		return err
	}
	owner := ownerReference(validator, uid)
	var written domain.WrittenSecrets
	for _, s := range secretSlots(validator, given) {
		var wrote bool
		switch def := defaults[s.name]; {
		case s.value != "":
			wrote, err = k.writeSecretKey(ctx, s, owner, true)
		case def != nil:
			s.value = *def
			wrote, err = k.writeSecretKey(ctx, s, owner, false)
		default:
			continue
		}
		if err != nil {
			return err
		}
		*s.flag(&written) = wrote
	}
	return k.referenceSecrets(ctx, validator, written)
}

// validatorUID is the uid of the validator's resource: from the cache, else
// (not synced yet, or another process created it) the API server.
func (k *Kube) validatorUID(ctx context.Context, validator string) (types.UID, error) {
	if cur := cached[v1alpha1.Validator](ctx, k, validator); cur != nil {
		return cur.UID, nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(ValidatorGVK)
	err := k.freshValidator(ctx, validator, m)
	return m.UID, err
}

// freshValidator reads the Validator of that name into obj from the API server.
func (k *Kube) freshValidator(ctx context.Context, name string, obj client.Object) error {
	err := k.api.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return domain.NotFound("validator %q does not exist in the cluster", name)
	}
	return err
}

// CachedSecrets tells which of the validator's Secrets the cache holds with their key.
func (k *Kube) CachedSecrets(validator string) domain.WrittenSecrets {
	return k.referenced(context.Background(), validator, domain.WrittenSecrets{})
}

// PasswordKeySecret holds the key generated database passwords derive from
// (key "key", 32 bytes), kept in the cluster beside the Secrets it protects.
const PasswordKeySecret = "validator-manager-password-key"

// writeSecretKey applies one key of one Secret and tells whether it wrote;
// a default (!replace) never overwrites a key another owner set.
func (k *Kube) writeSecretKey(ctx context.Context, s secretSlot, owner metav1.OwnerReference, replace bool) (bool, error) {
	if !replace {
		if cur := cached[corev1.Secret](ctx, k, s.name); cur != nil && hasKey(cur, s.key) {
			return false, nil
		}
	}
	sec := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            s.name,
			Namespace:       k.namespace,
			Labels:          labelsFor(owner.Name),
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Data: map[string][]byte{s.key: []byte(s.value)},
	}
	if s.key == DatabaseSecretKey {
		if err := k.keepPreviousPassword(ctx, sec); err != nil {
			return false, err
		}
	}
	err := k.apply(ctx, sec, replace)
	if !replace && apierrors.IsConflict(err) {
		return false, nil
	}
	return err == nil, redact(err)
}

// keepPreviousPassword adds to the database Secret sec its password's digest
// and the password the running database still takes, for the rotation.
func (k *Kube) keepPreviousPassword(ctx context.Context, sec *corev1.Secret) error {
	next := sec.Data[DatabaseSecretKey]
	sec.Labels[DatabasePasswordLabel] = PasswordDigest(next)
	if cached := cached[corev1.Secret](ctx, k, sec.Name); cached == nil || !hasKey(cached, DatabaseSecretKey) {
		return nil // a new Secret (a create reads nothing)
	}
	cur := &corev1.Secret{}
	err := k.api.Get(ctx, client.ObjectKeyFromObject(sec), cur)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return redact(err)
	}
	previous, had := cur.Data[DatabaseSecretKey]
	older := cur.Data[PreviousDatabasePasswordKey]
	if !had || string(previous) == string(next) || len(older) > 0 && k.databaseTakes(sec.Labels[ValidatorLabel], older) {
		// The same password again, or one the database never took (an
		// edit before the last rotation ran): it still takes the older one.
		previous = older
	}
	if len(previous) > 0 {
		sec.Data[PreviousDatabasePasswordKey] = previous
	}
	return nil
}

// databaseTakes tells from the apps' DatabasePasswordAnnotation whether the
// database takes password; no digest: no rotation ran, the first one holds.
func (k *Kube) databaseTakes(validator string, password []byte) bool {
	d := cached[appsv1.Deployment](context.Background(), k, validator+"-"+domain.ServiceValidatorApp)
	if d == nil {
		return false
	}
	digest, ok := d.Spec.Template.Annotations[DatabasePasswordAnnotation]
	return !ok || digest == PasswordDigest(password)
}

// DeleteValidator removes the backup CronJob, the Secrets and the resource;
// absent objects are fine. The backup PVC stays: backups outlive the validator.
func (k *Kube) DeleteValidator(ctx context.Context, name string) (err error) {
	defer func() { err = translate(fmt.Sprintf("delete validator %q", name), err) }()
	meta := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n, Namespace: k.namespace} }
	if err := k.deleteBackupCronJob(ctx, name); err != nil {
		return err
	}
	for _, s := range secretSlots(name, domain.ValidatorSecrets{}) {
		if err := client.IgnoreNotFound(k.client.Delete(ctx, &corev1.Secret{ObjectMeta: meta(s.name)}, byName)); err != nil {
			return redact(err)
		}
	}
	return client.IgnoreNotFound(k.client.Delete(ctx, &v1alpha1.Validator{ObjectMeta: meta(name)}, byName))
}

// byName deletes by name alone: read-your-writes Delete without a uid finds
// no cached object just applied, and deletes nothing.
var byName = client.DisableReadYourWritesConsistency

func (k *Kube) deleteBackupCronJob(ctx context.Context, validator string) error {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: BackupCronJobName(validator), Namespace: k.namespace}}
	return client.IgnoreNotFound(k.client.Delete(ctx, cj, byName, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

// ValidatorState reads one validator's state from the API server: it follows a write.
func (k *Kube) ValidatorState(ctx context.Context, name string) (domain.ValidatorState, error) {
	v := &v1alpha1.Validator{}
	if err := k.freshValidator(ctx, name, v); err != nil {
		return domain.ValidatorState{}, translate(fmt.Sprintf("read validator %q", name), err)
	}
	return validatorState(v), nil
}

// ApplyBackupSchedule makes the backup CronJob what b says (nil removes it,
// Deleted suspends it); the backup PVC is created when absent, never removed.
func (k *Kube) ApplyBackupSchedule(ctx context.Context, validator string, b *domain.BackupSchedule) (err error) {
	defer func() { err = translate(fmt.Sprintf("apply backup schedule of %q", validator), err) }()
	if b == nil {
		if k.synced.Load() && cached[batchv1.CronJob](ctx, k, BackupCronJobName(validator)) == nil {
			return nil
		}
		return k.deleteBackupCronJob(ctx, validator)
	}
	// The rules Kubernetes applies to a CronJob with a time zone.
	if _, err := schedule.ParseBackup(b.Cron); err != nil {
		return domain.Invalid("cron", "%v", err)
	}
	if b.MaxBackups < 1 {
		return domain.Invalid("maxBackups", "must be at least 1")
	}
	v := &v1alpha1.Validator{}
	if err := k.freshValidator(ctx, validator, v); err != nil {
		return err
	}
	want, err := k.backupCronJob(v, *b)
	if err != nil {
		return err
	}
	if k.cronJobInStep(ctx, want) {
		return nil
	}
	if !b.Deleted {
		pvc := backupPVC(k.namespace, validator, v.Spec.StorageClass)
		err := k.api.Get(ctx, client.ObjectKeyFromObject(pvc), &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}})
		if apierrors.IsNotFound(err) {
			// Nothing reads claims through this client: its read-your-writes
			// would start, and wait for, an informer of claims first.
			err = k.client.Create(ctx, pvc, client.FieldOwner(FieldOwner), client.DisableReadYourWritesConsistency)
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		if err != nil {
			return err
		}
	}
	return k.apply(ctx, want, true)
}

// CachedCronJobVersion is the cached CronJob's resourceVersion, "" when none.
func (k *Kube) CachedCronJobVersion(name string) string {
	if cj := cached[batchv1.CronJob](context.Background(), k, name); cj != nil {
		return cj.ResourceVersion
	}
	return ""
}

// cronJobInStep tells from the cache whether the CronJob has want's labels, owner and spec.
func (k *Kube) cronJobInStep(ctx context.Context, want *batchv1.CronJob) bool {
	cur := cached[batchv1.CronJob](ctx, k, want.Name)
	if cur == nil || !labels.SelectorFromSet(want.Labels).Matches(labels.Set(cur.Labels)) || !slices.ContainsFunc(cur.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == want.OwnerReferences[0].UID }) {
		return false
	}
	return jsonCovers(want.Spec, cur.Spec, func(any) bool { return true })
}

// InStep tells from the cache alone whether the Validator resource and backup
// CronJob are what in records: an unchanged validator costs no API call.
func (k *Kube) InStep(in domain.ValidatorIntent) bool {
	v := in.Validator
	spec, err := validatorSpec(v, in.Prune)
	if err != nil || !k.validatorInStep(context.Background(), v.Name, spec) {
		return false
	}
	if in.Backup == nil {
		return cached[batchv1.CronJob](context.Background(), k, BackupCronJobName(v.Name)) == nil
	}
	cur := k.cachedValidator(v.Name)
	if cur == nil {
		return false
	}
	want, err := k.backupCronJob(cur, *in.Backup)
	return err == nil && k.cronJobInStep(context.Background(), want)
}

// Ping asks the API server for its version; before the caches have synced
// the gateway is unavailable (domain.ErrStarting within domain.StartChance).
func (k *Kube) Ping(ctx context.Context) error {
	if !k.synced.Load() {
		return domain.NotReady(k.began.Load(), "cluster: the gateway's caches have not synced yet", "the start")
	}
	// k.core is always a real clientset (NewKube): its discovery has a REST
	// client, which, unlike ServerVersion, honours ctx.
	return translate("ping", k.core.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error())
}

// LedgerAPIClientSecret reads a validator's ledger API client secret from
// the API server (the cache holds no values); its errors never quote it.
func (k *Kube) LedgerAPIClientSecret(ctx context.Context, validator string) (string, error) {
	name := domain.LedgerAPIAuthSecretName(validator)
	sec := &corev1.Secret{}
	if err := k.api.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: name}, sec); err != nil {
		return "", translate(fmt.Sprintf("read Secret %q", name), redact(err))
	}
	v, ok := sec.Data[LedgerAPIAuthSecretKey]
	if !ok {
		return "", domain.NotFound("Secret %q has no key %q", name, LedgerAPIAuthSecretKey)
	}
	return string(v), nil
}

// validatorState is the validator's state as its resource's fields say.
func validatorState(v *v1alpha1.Validator) domain.ValidatorState {
	phase := domain.PhasePending
	switch p := domain.Phase(v.Status.Phase); p {
	case domain.PhasePending, domain.PhaseRunning, domain.PhaseCompleted:
		phase = p
	}
	return domain.ValidatorState{
		Phase:           phase,
		DatabaseRunning: v.Status.DatabaseReady && !v.Spec.ExternalDatabase,
		DisableUserEdit: strings.EqualFold(v.Annotations[domain.DisableUserEditAnnotation], "true"),
	}
}

// CachedState reads a managed validator's state from the cache; false: none.
func (k *Kube) CachedState(name string) (domain.ValidatorState, bool) {
	v := k.cachedValidator(name)
	if v == nil {
		return domain.ValidatorState{}, false
	}
	return validatorState(v), true
}

// ManagedValidators names, from the cache, the Validators this installation manages.
func (k *Kube) ManagedValidators() ([]string, error) {
	if !k.synced.Load() {
		return nil, domain.Unavailable("cluster: the validator cache is not synced")
	}
	ctx, cancel := context.WithTimeout(context.Background(), cacheLag)
	defer cancel()
	vs := &v1alpha1.ValidatorList{}
	if err := k.client.List(ctx, vs, client.InNamespace(k.namespace), client.MatchingLabelsSelector{Selector: k.managed}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, translate("list validators", err)
	}
	names := make([]string, len(vs.Items))
	for i := range vs.Items {
		names[i] = vs.Items[i].Name
	}
	return names, nil
}
