package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	metricsv1beta1 "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/schedule"
)

// KubeOptions tune the client-go gateway; zero values take the defaults.
type KubeOptions struct {
	// BackupImage runs the backup Jobs; it needs sh, pg_dumpall and gzip.
	// Default postgres:16.
	BackupImage string
	// BackupStorage is the size of a new backup PVC. Default 10Gi.
	BackupStorage string
	// Resync is the informer's resync period; 0 means none.
	Resync time.Duration
	// Instance identifies the installation (its database): the Validator
	// resources the gateway writes carry it (InstallationLabel), and its
	// informer sees only those. Empty: every managed resource.
	Instance string
	// Metrics reads metrics.k8s.io (or the embedded default's node
	// simulator); nil means the metrics API is unavailable (application
	// metrics then say metricsAvailable false).
	Metrics metricsv1beta1.PodMetricsesGetter
}

// Defaults of KubeOptions.
const (
	DefaultBackupImage   = "postgres:16"
	DefaultBackupStorage = "10Gi"
)

// Kube is the gateway to a Kubernetes cluster over client-go. It works in one
// namespace. Reads of many validators come from an informer (Start first);
// reads that must be fresh and all writes go to the API server.
type Kube struct {
	namespace  string
	core       kubernetes.Interface
	dyn        dynamic.Interface
	image      string
	backupSize resource.Quantity
	// instance is KubeOptions.Instance.
	instance string
	// managed selects the Validators this installation manages: release
	// 1.11 and the reconciler read their summaries, kept beside release
	// 2.0's encodings in the one Validator cache (validatorView).
	managed labels.Selector
	// CronJobs the gateway wrote, cached, so that a reconcile that changes
	// nothing costs the API server nothing.
	typed      informers.SharedInformerFactory
	cronJobs   cache.SharedIndexInformer
	cronLister cache.GenericNamespaceLister // of *cronJobSummary
	synced     atomic.Bool
	// seenCronJobs is the highest resourceVersion the CronJob informer has
	// delivered (numeric resourceVersions only; WaitSeen waits on it).
	seenCronJobs atomic.Int64
	stop         chan struct{}
	stopOnce     sync.Once
	// Release 2.0's read model: every Validator and Application of the
	// namespace (unfiltered informers), kept encoded; the Validators this
	// installation manages also summarised (managed).
	views           dynamicinformer.DynamicSharedInformerFactory
	validatorView   *view
	applicationView *view
	// metrics reads metrics.k8s.io; nil: the metrics API is unavailable.
	metrics metricsv1beta1.PodMetricsesGetter
	// Every Secret's name and resourceVersion (proxy.go).
	secrets        informers.SharedInformerFactory
	secretVersions cache.SharedIndexInformer
}

// RESTConfig builds the client configuration for a cluster mode: "kubeconfig"
// (kubeconfig names the file; empty means $KUBECONFIG or ~/.kube/config) or
// "in-cluster" (the pod's service account).
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

// NewKube connects to the cluster of cfg, working in namespace. Call Start
// before reading its caches.
func NewKube(cfg *rest.Config, namespace string, opts KubeOptions) (*Kube, error) {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if opts.Metrics == nil {
		mc, err := metricsclient.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		opts.Metrics = mc.MetricsV1beta1()
	}
	return NewKubeForClients(core, dyn, namespace, opts)
}

// NewKubeForClients builds the gateway over given clients (tests pass
// client-go fakes).
func NewKubeForClients(core kubernetes.Interface, dyn dynamic.Interface, namespace string, opts KubeOptions) (*Kube, error) {
	if namespace == "" {
		return nil, fmt.Errorf("cluster: namespace must not be empty")
	}
	if opts.BackupImage == "" {
		opts.BackupImage = DefaultBackupImage
	}
	if opts.BackupStorage == "" {
		opts.BackupStorage = DefaultBackupStorage
	}
	size, err := resource.ParseQuantity(opts.BackupStorage)
	if err != nil {
		return nil, fmt.Errorf("cluster: backup storage %q: %w", opts.BackupStorage, err)
	}
	k := &Kube{namespace: namespace, core: core, dyn: dyn, image: opts.BackupImage, backupSize: size, instance: opts.Instance, stop: make(chan struct{}), metrics: opts.Metrics}
	k.views = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, opts.Resync, namespace, nil)
	selector := managedSelector
	if k.instance != "" {
		selector += "," + InstallationLabel + "=" + k.instance
	}
	if k.managed, err = labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("cluster: installation %q: %w", k.instance, err)
	}
	k.validatorView = newView(domain.KindValidator, ValidatorResource)
	k.applicationView = newView(domain.KindApplication, ApplicationGVR)
	if err := k.validatorView.attach(k.views.ForResource(ValidatorResource).Informer(), k.managed); err != nil {
		return nil, err
	}
	if k.secrets, k.secretVersions, err = newSecretVersions(core, namespace, opts.Resync); err != nil {
		return nil, err
	}
	k.typed = informers.NewSharedInformerFactoryWithOptions(core, opts.Resync, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = managedSelector }))
	cj := k.typed.Batch().V1().CronJobs()
	k.cronJobs = cj.Informer()
	// The cache holds cronJobSummary values, not the CronJobs.
	if err := k.cronJobs.SetTransform(summarizeCronJob); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	k.cronLister = cache.NewGenericLister(k.cronJobs.GetIndexer(), batchv1.Resource("cronjobs")).ByNamespace(namespace)
	see := func(obj any) { observe(&k.seenCronJobs, obj) }
	if _, err := k.cronJobs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
		DeleteFunc: see,
	}); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return k, nil
}

// see records the resourceVersion of an object the informer delivered (its
// cache already holds it: handlers run after the cache is updated).
// observe raises seen to obj's resourceVersion.
func observe(seen *atomic.Int64, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	for {
		cur := seen.Load()
		if rv <= cur || seen.CompareAndSwap(cur, rv) {
			return
		}
	}
}

// waitSeen waits, at most limit, until the informer has delivered
// resourceVersion rv.
func waitSeen(ctx context.Context, seen *atomic.Int64, rv int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for seen.Load() < rv && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// Start starts the validator informer and waits, at most until ctx ends, for
// its first sync. The informer runs until Close, not until ctx ends (a
// start-up timeout must not stop it). Start fails fast when the Validator
// CRD is not installed.
func (k *Kube) Start(ctx context.Context) error {
	_, err := k.validators().List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: managedSelector})
	if apierrors.IsNotFound(err) {
		return domain.Unavailable("cluster: the Validator resource (%s) is not served; apply deploy/crds", ValidatorResource.GroupResource())
	}
	if err != nil {
		return translate("list validators", err)
	}
	// Applications are read only by release 2.0: without their CRD the
	// gateway runs, and reads of applications say what is missing.
	_, err = k.dyn.Resource(ApplicationGVR).Namespace(k.namespace).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return translate("list applications", err)
	case !k.applicationView.served:
		if err := k.applicationView.attach(k.views.ForResource(ApplicationGVR).Informer(), nil); err != nil {
			return err
		}
	}
	k.typed.Start(k.stop)
	k.views.Start(k.stop)
	k.secrets.Start(k.stop)
	waits := []cache.InformerSynced{k.cronJobs.HasSynced, k.validatorView.synced, k.secretVersions.HasSynced}
	if k.applicationView.served {
		waits = append(waits, k.applicationView.synced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), waits...) {
		if ctx.Err() == nil { // closed meanwhile
			return domain.Unavailable("cluster: the gateway is closed")
		}
		return domain.Unavailable("cluster: the validator cache did not sync: %v", ctx.Err())
	}
	select {
	case <-k.stop:
		return domain.Unavailable("cluster: the gateway is closed")
	default:
	}
	k.synced.Store(true)
	return nil
}

// Close stops the informer and waits for it; ManagedValidators then fails.
func (k *Kube) Close() {
	k.stopOnce.Do(func() {
		k.synced.Store(false)
		close(k.stop)
		k.typed.Shutdown()
		k.views.Shutdown()
		k.secrets.Shutdown()
	})
}

func (k *Kube) validators() dynamic.ResourceInterface {
	return k.dyn.Resource(ValidatorResource).Namespace(k.namespace)
}

// retryWrite retries fn while it loses a race: a conflicting update, or a
// create that another writer beat.
func retryWrite(fn func() error) error {
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, fn)
}

func mergeLabels(have, want map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

// withOwner sets ref among refs, replacing an older reference to the same owner.
func withOwner(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	out := refs[:0:0]
	for _, r := range refs {
		if r.Kind != ref.Kind || r.Name != ref.Name || r.APIVersion != ref.APIVersion {
			out = append(out, r)
		}
	}
	return append(out, ref)
}

// CheckReferences fails with domain.Invalid naming the field of the first
// object that does not exist: Secrets, then Secret keys, then StorageClasses.
func (k *Kube) CheckReferences(ctx context.Context, refs domain.References) error {
	return translate("check references", k.checkReferences(ctx, refs))
}

func (k *Kube) checkReferences(ctx context.Context, refs domain.References) error {
	secrets := map[string]*corev1.Secret{} // nil value: absent
	secret := func(name string) (*corev1.Secret, error) {
		if s, ok := secrets[name]; ok {
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
		s, err := secret(r.Name)
		if err != nil {
			return err
		}
		if s == nil {
			return domain.Invalid(r.Field, "secret %q does not exist in namespace %q", r.Name, k.namespace)
		}
	}
	for _, r := range refs.SecretKeys {
		s, err := secret(r.Name)
		if err != nil {
			return err
		}
		switch {
		case s == nil && !r.Optional:
			return domain.Invalid(r.Field, "secret %q does not exist in namespace %q", r.Name, k.namespace)
		case s == nil:
		case !hasKey(s, r.Key) && !r.Optional:
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

func hasKey(s *corev1.Secret, key string) bool {
	if _, ok := s.Data[key]; ok {
		return true
	}
	_, ok := s.StringData[key]
	return ok
}

// specHashAnnotation holds a hash of the spec the gateway last wrote: a
// reconcile whose desired spec has the same hash writes nothing. (The API
// server defaults fields of what it stores, so the stored object itself does
// not compare equal to what was sent.)
const specHashAnnotation = "validator-manager.io/spec-hash"

// ApplyValidator makes the Validator resource what v and prune (nil: no
// pruning schedule) say. It keeps annotations, status and spec.secrets, and
// writes nothing when the resource (read from the API server) already has
// the desired spec.
func (k *Kube) ApplyValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) error {
	return translate(fmt.Sprintf("apply validator %q", v.Name), k.applyValidator(ctx, v, prune))
}

func (k *Kube) applyValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) error {
	if v.Name == "" {
		return domain.Invalid("name", "must not be empty")
	}
	spec, err := validatorSpec(v, prune)
	if err != nil {
		return err
	}
	hash, err := specHash(spec)
	if err != nil {
		return err
	}
	return retryWrite(func() error {
		cur, err := k.validators().Get(ctx, v.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Secrets may outlive a resource deleted by hand: reference those there are.
			refs, err := k.existingSecrets(ctx, v.Name)
			if err != nil {
				return err
			}
			if len(refs) > 0 {
				spec["secrets"] = refs
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": Group + "/" + Version,
				"kind":       Kind,
				"spec":       spec,
			}}
			obj.SetName(v.Name)
			obj.SetNamespace(k.namespace)
			obj.SetLabels(k.validatorLabels(v.Name))
			obj.SetAnnotations(map[string]string{specHashAnnotation: hash})
			_, err = k.validators().Create(ctx, obj, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if upToDate(cur, hash, k.validatorLabels(v.Name)) {
			return nil
		}
		obj := cur.DeepCopy()
		if refs, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "secrets"); found {
			spec["secrets"] = refs
		}
		obj.Object["spec"] = spec
		obj.SetLabels(mergeLabels(obj.GetLabels(), k.validatorLabels(v.Name)))
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[specHashAnnotation] = hash
		obj.SetAnnotations(annotations)
		_, err = k.validators().Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
}

// validatorLabels are the labels of a Validator resource the gateway writes.
func (k *Kube) validatorLabels(validator string) map[string]string {
	l := labelsFor(validator)
	if k.instance != "" {
		l[InstallationLabel] = k.instance
	}
	return l
}

// cachedValidator reads the summary of a validator this installation
// manages from the cache; false when the cache is not synced or has no such
// validator.
func (k *Kube) cachedValidator(name string) (*validatorSummary, bool) {
	if !k.synced.Load() {
		return nil, false
	}
	o, ok, err := k.validatorView.informer.GetIndexer().GetByKey(k.namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	v, _ := o.(*viewObject)
	if v == nil || v.managed == nil {
		return nil, false
	}
	return v.managed, true
}

// cachedValidators are the summaries of every validator this installation
// manages, from the cache (shared: read them, never change them).
func (k *Kube) cachedValidators() ([]*validatorSummary, error) {
	if !k.synced.Load() {
		return nil, domain.Unavailable("cluster: the validator cache is not started (or the gateway is closed)")
	}
	objs := k.validatorView.informer.GetStore().List()
	out := make([]*validatorSummary, 0, len(objs))
	for _, o := range objs {
		if v, _ := o.(*viewObject); v != nil && v.managed != nil {
			out = append(out, v.managed)
		}
	}
	return out, nil
}

// upToDate tells whether obj carries the spec of hash and the labels want.
func upToDate(obj metav1.Object, hash string, want map[string]string) bool {
	if obj.GetAnnotations()[specHashAnnotation] != hash {
		return false
	}
	have := obj.GetLabels()
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// existingSecrets is spec.secrets for the validator's Secrets that exist.
func (k *Kube) existingSecrets(ctx context.Context, validator string) (map[string]any, error) {
	refs := map[string]any{}
	for _, s := range secretSlots(validator, domain.ValidatorSecrets{}) {
		_, err := k.core.CoreV1().Secrets(k.namespace).Get(ctx, s.name, metav1.GetOptions{})
		switch {
		case err == nil:
			refs[s.field] = secretRef(s)
		case !apierrors.IsNotFound(err):
			return nil, redact(err)
		}
	}
	return refs, nil
}

// WriteSecrets writes the secret values given (empty ones are left as they
// are) into the validator's Secrets, owned by its resource, and makes the
// resource's spec.secrets reference every one of its Secrets that exists (an
// operator may have created one by hand). The resource must exist.
func (k *Kube) WriteSecrets(ctx context.Context, validator string, secrets domain.ValidatorSecrets) error {
	return translate(fmt.Sprintf("write secrets of validator %q", validator), k.writeSecrets(ctx, validator, secrets))
}

func (k *Kube) writeSecrets(ctx context.Context, validator string, secrets domain.ValidatorSecrets) error {
	values := map[string]string{}
	for _, s := range secretSlots(validator, secrets) {
		values[s.name] = s.value
	}
	return k.putSecrets(ctx, validator, func(ctx context.Context, s secretSlot, owner metav1.OwnerReference) error {
		if s.value = values[s.name]; s.value == "" {
			return nil
		}
		return k.writeSecretKey(ctx, s, owner, true)
	})
}

// putSecrets calls put for each of the validator's Secrets with the
// resource as their owner, then makes spec.secrets reference every one that
// exists (an operator may have created one by hand).
func (k *Kube) putSecrets(ctx context.Context, validator string, put func(context.Context, secretSlot, metav1.OwnerReference) error) error {
	cur, err := k.validators().Get(ctx, validator, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return domain.NotFound("validator %q does not exist in the cluster", validator)
	}
	if err != nil {
		return err
	}
	owner := ownerReference(validator, cur.GetUID())
	for _, s := range secretSlots(validator, domain.ValidatorSecrets{}) {
		if err := put(ctx, s, owner); err != nil {
			return err
		}
	}
	refs, err := k.existingSecrets(ctx, validator)
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := k.validators().Get(ctx, validator, metav1.GetOptions{})
		if err != nil {
			return err
		}
		have, _, _ := unstructured.NestedMap(cur.Object, "spec", "secrets")
		if len(have) == 0 && len(refs) == 0 || equality.Semantic.DeepEqual(have, refs) {
			return nil
		}
		obj := cur.DeepCopy()
		if len(refs) == 0 {
			unstructured.RemoveNestedField(obj.Object, "spec", "secrets")
		} else if err := unstructured.SetNestedMap(obj.Object, refs, "spec", "secrets"); err != nil {
			return err
		}
		_, err = k.validators().Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
}

// CachedSecrets tells from the Secret cache which of the validator's
// Secrets exist with their key (all false before the cache has synced).
func (k *Kube) CachedSecrets(validator string) domain.WrittenSecrets {
	var w domain.WrittenSecrets
	if !k.synced.Load() {
		return w
	}
	has := func(name string) bool {
		o, found, err := k.secretVersions.GetIndexer().GetByKey(k.namespace + "/" + name)
		st, _ := o.(*secretStamp)
		return err == nil && found && st != nil && st.hasKey
	}
	w.Onboarding = has(domain.OnboardingSecretName(validator))
	w.LedgerAPIAuth = has(domain.LedgerAPIAuthSecretName(validator))
	w.Database = has(domain.DatabaseSecretName(validator))
	return w
}

// DefaultSecrets writes each value d gives into its Secret only where the
// Secret or its key is missing (read from the API server), never over a
// value, and references the validator's Secrets in spec.secrets. The
// resource must exist.
func (k *Kube) DefaultSecrets(ctx context.Context, validator string, d domain.SecretDefaults) error {
	return translate(fmt.Sprintf("write missing secrets of validator %q", validator), k.defaultSecrets(ctx, validator, d))
}

func (k *Kube) defaultSecrets(ctx context.Context, validator string, d domain.SecretDefaults) error {
	values := map[string]*string{
		domain.LedgerAPIAuthSecretName(validator): d.LedgerAPIClientSecret,
		domain.DatabaseSecretName(validator):      d.DatabasePassword,
	}
	return k.putSecrets(ctx, validator, func(ctx context.Context, s secretSlot, owner metav1.OwnerReference) error {
		v := values[s.name]
		if v == nil {
			return nil
		}
		s.value = *v
		return k.writeSecretKey(ctx, s, owner, false)
	})
}

// PasswordKeySecret holds the key generated database passwords derive
// from (key "key", 32 bytes): made by the first controller that needs it,
// kept in the cluster beside the Secrets it protects.
const PasswordKeySecret = "validator-manager-password-key"

// PasswordKey reads the key of generated passwords, creating it once.
func (k *Kube) PasswordKey(ctx context.Context) ([]byte, error) {
	api := k.core.CoreV1().Secrets(k.namespace)
	for {
		s, err := api.Get(ctx, PasswordKeySecret, metav1.GetOptions{})
		if err == nil {
			if key := s.Data["key"]; len(key) == 32 {
				return key, nil
			}
			return nil, fmt.Errorf("Secret %s/%s holds no 32-byte key", k.namespace, PasswordKeySecret)
		}
		if !apierrors.IsNotFound(err) {
			return nil, translate("read the password key", redact(err))
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		_, err = api.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: PasswordKeySecret, Namespace: k.namespace, Labels: map[string]string{ManagedByLabel: ManagedBy}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"key": key},
		}, metav1.CreateOptions{})
		if err == nil {
			return key, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, translate("create the password key", redact(err))
		}
		// Another process made it first: read theirs.
	}
}

// writeSecretKey sets one key of one Secret, creating the Secret when
// absent; a key that holds a value is replaced only when replace is set.
// Its errors carry no server message (it could quote the value).
func (k *Kube) writeSecretKey(ctx context.Context, s secretSlot, owner metav1.OwnerReference, replace bool) error {
	api := k.core.CoreV1().Secrets(k.namespace)
	return redact(retryWrite(func() error {
		cur, err := api.Get(ctx, s.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name:            s.name,
					Namespace:       k.namespace,
					Labels:          labelsFor(owner.Name),
					OwnerReferences: []metav1.OwnerReference{owner},
				},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{s.key: []byte(s.value)},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if !replace && hasKey(cur, s.key) {
			return nil
		}
		sec := cur.DeepCopy()
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[s.key] = []byte(s.value)
		sec.Labels = mergeLabels(sec.Labels, labelsFor(owner.Name))
		sec.OwnerReferences = withOwner(sec.OwnerReferences, owner)
		_, err = api.Update(ctx, sec, metav1.UpdateOptions{})
		return err
	}))
}

// DeleteValidator removes the backup CronJob, the Secrets and the resource;
// absent objects are fine. The backup PVC stays: backups outlive the
// validator (delete <name>-backups by hand to drop them).
func (k *Kube) DeleteValidator(ctx context.Context, name string) error {
	return translate(fmt.Sprintf("delete validator %q", name), k.deleteValidator(ctx, name))
}

func (k *Kube) deleteValidator(ctx context.Context, name string) error {
	absentOK := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	background := metav1.DeletePropagationBackground
	err := k.core.BatchV1().CronJobs(k.namespace).Delete(ctx, BackupCronJobName(name), metav1.DeleteOptions{PropagationPolicy: &background})
	if err := absentOK(err); err != nil {
		return err
	}
	for _, s := range secretSlots(name, domain.ValidatorSecrets{}) {
		if err := absentOK(k.core.CoreV1().Secrets(k.namespace).Delete(ctx, s.name, metav1.DeleteOptions{})); err != nil {
			return redact(err)
		}
	}
	return absentOK(k.validators().Delete(ctx, name, metav1.DeleteOptions{}))
}

// ValidatorState reads one validator's state from the API server (fresh: it
// follows a write).
func (k *Kube) ValidatorState(ctx context.Context, name string) (domain.ValidatorState, error) {
	obj, err := k.validators().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return domain.ValidatorState{}, domain.NotFound("validator %q does not exist in the cluster", name)
	}
	if err != nil {
		return domain.ValidatorState{}, translate(fmt.Sprintf("read validator %q", name), err)
	}
	return summarize(obj).state(), nil
}

// checkBackupSchedule applies the rules Kubernetes applies to a CronJob with
// a time zone, so that every gateway refuses the same schedules.
func checkBackupSchedule(b domain.BackupSchedule) error {
	if _, err := schedule.ParseBackup(b.Cron); err != nil {
		return domain.Invalid("cron", "%v", err)
	}
	if b.MaxBackups < 1 {
		return domain.Invalid("maxBackups", "must be at least 1")
	}
	return nil
}

// ApplyBackupSchedule makes the validator's backup CronJob what b says:
// nil removes it, a Deleted schedule suspends it. The backup PVC is created
// when absent and never removed (backups outlive their schedule). Nothing is
// written when the cached CronJob already is what b says.
func (k *Kube) ApplyBackupSchedule(ctx context.Context, validator string, b *domain.BackupSchedule) error {
	return translate(fmt.Sprintf("apply backup schedule of %q", validator), k.applyBackupSchedule(ctx, validator, b))
}

func (k *Kube) applyBackupSchedule(ctx context.Context, validator string, b *domain.BackupSchedule) error {
	api := k.core.BatchV1().CronJobs(k.namespace)
	if b == nil {
		background := metav1.DeletePropagationBackground
		err := api.Delete(ctx, BackupCronJobName(validator), metav1.DeleteOptions{PropagationPolicy: &background})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err := checkBackupSchedule(*b); err != nil {
		return err
	}
	v, err := k.validators().Get(ctx, validator, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return domain.NotFound("validator %q does not exist in the cluster", validator)
	}
	if err != nil {
		return err
	}
	want, err := k.desiredCronJob(summarize(v), *b)
	if err != nil {
		return err
	}
	spec, _, _ := unstructured.NestedMap(v.Object, "spec")
	if !b.Deleted {
		pvc := backupPVC(k.namespace, validator, k.backupSize, specString(spec, "storageClass"))
		_, err := k.core.CoreV1().PersistentVolumeClaims(k.namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = k.core.CoreV1().PersistentVolumeClaims(k.namespace).Create(ctx, pvc, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		if err != nil {
			return err
		}
	}
	hash := want.Annotations[specHashAnnotation]
	return retryWrite(func() error {
		cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if upToDate(cur, hash, want.Labels) && ownedBy(cur.OwnerReferences, v.GetUID()) {
			return nil
		}
		cj := cur.DeepCopy()
		cj.Spec = *want.Spec.DeepCopy()
		cj.Labels = mergeLabels(cj.Labels, want.Labels)
		if cj.Annotations == nil {
			cj.Annotations = map[string]string{}
		}
		cj.Annotations[specHashAnnotation] = hash
		cj.OwnerReferences = withOwner(cj.OwnerReferences, want.OwnerReferences[0])
		_, err = api.Update(ctx, cj, metav1.UpdateOptions{})
		return err
	})
}

// desiredCronJob is the backup CronJob of the Validator resource v for b,
// annotated with the hash of its spec.
func (k *Kube) desiredCronJob(v *validatorSummary, b domain.BackupSchedule) (*batchv1.CronJob, error) {
	if v.externalDatabase && !b.Deleted {
		return nil, errExternalDatabase(v.name)
	}
	want := backupCronJob(backupTarget{
		namespace:    k.namespace,
		validator:    v.name,
		uid:          v.uid,
		image:        k.image,
		cron:         b.Cron,
		maxBackups:   b.MaxBackups,
		suspend:      b.Deleted,
		databaseUser: v.databaseUser,
	})
	hash, err := specHash(want.Spec)
	if err != nil {
		return nil, err
	}
	want.Annotations = map[string]string{specHashAnnotation: hash}
	return want, nil
}

// InStep tells from the caches alone whether the cluster already runs what
// in records (the Validator resource's spec and the backup CronJob), so that
// a periodic reconcile of an unchanged validator costs the API server
// nothing. False when the caches cannot tell: not synced, or behind.
func (k *Kube) InStep(in domain.ValidatorIntent) bool {
	v := in.Validator
	spec, err := validatorSpec(v, in.Prune)
	if err != nil {
		return false
	}
	hash, err := specHash(spec)
	if err != nil {
		return false
	}
	cur, ok := k.cachedValidator(v.Name)
	if !ok || !upToDate(cur.GetObjectMeta(), hash, k.validatorLabels(v.Name)) {
		return false
	}
	o, err := k.cronLister.Get(BackupCronJobName(v.Name))
	if in.Backup == nil {
		return apierrors.IsNotFound(err)
	}
	if err != nil {
		return false
	}
	cj, ok := o.(*cronJobSummary)
	if !ok {
		return false
	}
	want, err := k.desiredCronJob(cur, *in.Backup)
	return err == nil && upToDate(cj.GetObjectMeta(), want.Annotations[specHashAnnotation], want.Labels) && ownedBy(cj.owners, cur.uid)
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// Ping asks the API server for its version; before the caches have synced
// it reports the gateway unavailable.
func (k *Kube) Ping(ctx context.Context) error {
	if !k.synced.Load() {
		return domain.Unavailable("cluster: the gateway's caches have not synced yet")
	}
	disc := k.core.Discovery()
	var err error
	if rc := disc.RESTClient(); rc != nil {
		err = rc.Get().AbsPath("/version").Do(ctx).Error()
	} else {
		_, err = disc.ServerVersion()
	}
	return translate("ping", err)
}

// Resource reads a Validator resource from the API server, as stored;
// domain.ErrNotFound when absent.
func (k *Kube) Resource(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	obj, err := k.validators().Get(ctx, name, metav1.GetOptions{})
	return obj, translate(fmt.Sprintf("read validator %q", name), err)
}

// BackupCronJob reads a validator's backup CronJob from the API server;
// domain.ErrNotFound when absent.
func (k *Kube) BackupCronJob(ctx context.Context, validator string) (*batchv1.CronJob, error) {
	cj, err := k.core.BatchV1().CronJobs(k.namespace).Get(ctx, BackupCronJobName(validator), metav1.GetOptions{})
	return cj, translate(fmt.Sprintf("read backup schedule of %q", validator), err)
}

// LedgerAPIClientSecret reads the client secret of a validator's ledger API
// client from its Secret; domain.ErrNotFound when the Secret or its key is
// absent. The value is never logged and its errors never quote it.
func (k *Kube) LedgerAPIClientSecret(ctx context.Context, validator string) (string, error) {
	name := domain.LedgerAPIAuthSecretName(validator)
	sec, err := k.core.CoreV1().Secrets(k.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", translate(fmt.Sprintf("read Secret %q", name), redact(err))
	}
	v, ok := sec.Data[LedgerAPIAuthSecretKey]
	if !ok {
		return "", domain.NotFound("Secret %q has no key %q", name, LedgerAPIAuthSecretKey)
	}
	return string(v), nil
}

// CachedState reads a managed validator's state from the cache; false when
// the cache is not synced or has no such resource.
func (k *Kube) CachedState(name string) (domain.ValidatorState, bool) {
	s, ok := k.cachedValidator(name)
	if !ok {
		return domain.ValidatorState{}, false
	}
	return s.state(), true
}

// ManagedValidators names every Validator resource this installation
// manages, from the cache.
func (k *Kube) ManagedValidators() ([]string, error) {
	summaries, err := k.cachedValidators()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(summaries))
	for i, s := range summaries {
		names[i] = s.name
	}
	return names, nil
}

// Watch calls f with the validator's name whenever a managed Validator
// resource or a backup CronJob the gateway wrote is added, changed or
// deleted (after the cache holds the change).
func (k *Kube) Watch(f func(name string)) error {
	named := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *viewObject:
			if o.managed != nil {
				f(o.name)
			}
		case *cronJobSummary:
			if name := o.GetObjectMeta().GetLabels()[ValidatorLabel]; name != "" {
				f(name)
			}
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    named,
		UpdateFunc: func(_, obj any) { named(obj) },
		DeleteFunc: named,
	}
	if _, err := k.validatorView.informer.AddEventHandler(h); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if _, err := k.cronJobs.AddEventHandler(h); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	// A validator's Secret deleted or emptied by hand: only for validators
	// this installation manages (the name alone could be anyone's).
	secret := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if st, _ := obj.(*secretStamp); st != nil && st.validator != "" {
			if _, ok := k.cachedValidator(st.validator); ok {
				f(st.validator)
			}
		}
	}
	_, err := k.secretVersions.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    secret,
		UpdateFunc: func(_, obj any) { secret(obj) },
		DeleteFunc: secret,
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// WaitSeen waits, at most limit, until the cache of gr (cronjobs,
// validators or applications) has delivered resourceVersion rv.
func (k *Kube) WaitSeen(ctx context.Context, gr schema.GroupResource, rv int64, limit time.Duration) error {
	switch gr {
	case batchv1.Resource("cronjobs"):
		return waitSeen(ctx, &k.seenCronJobs, rv, limit)
	case k.validatorView.gvr.GroupResource():
		return waitSeen(ctx, &k.validatorView.seen, rv, limit)
	case k.applicationView.gvr.GroupResource():
		return waitSeen(ctx, &k.applicationView.seen, rv, limit)
	}
	return fmt.Errorf("cluster: no cache of %s", gr)
}
