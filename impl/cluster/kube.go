package cluster

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

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
	factory    dynamicinformer.DynamicSharedInformerFactory
	informer   cache.SharedIndexInformer
	lister     cache.GenericNamespaceLister
	synced     atomic.Bool
	// seen is the highest resourceVersion the informer has delivered
	// (numeric resourceVersions only; the embedded cluster waits on it).
	seen     atomic.Int64
	stop     chan struct{}
	stopOnce sync.Once
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
// before ValidatorStates.
func NewKube(cfg *rest.Config, namespace string, opts KubeOptions) (*Kube, error) {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
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
	k := &Kube{namespace: namespace, core: core, dyn: dyn, image: opts.BackupImage, backupSize: size, stop: make(chan struct{})}
	k.factory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, opts.Resync, namespace,
		func(o *metav1.ListOptions) { o.LabelSelector = managedSelector })
	generic := k.factory.ForResource(ValidatorResource)
	k.informer = generic.Informer()
	k.lister = generic.Lister().ByNamespace(namespace)
	if _, err := k.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.see,
		UpdateFunc: func(_, obj any) { k.see(obj) },
		DeleteFunc: k.see,
	}); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return k, nil
}

// see records the resourceVersion of an object the informer delivered (its
// cache already holds it: handlers run after the cache is updated).
func (k *Kube) see(obj any) {
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
		cur := k.seen.Load()
		if rv <= cur || k.seen.CompareAndSwap(cur, rv) {
			return
		}
	}
}

// waitSeen waits, at most limit, until the informer has delivered
// resourceVersion rv.
func (k *Kube) waitSeen(ctx context.Context, rv int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for k.seen.Load() < rv && time.Now().Before(deadline) {
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
	k.factory.Start(k.stop)
	if !cache.WaitForCacheSync(ctx.Done(), k.informer.HasSynced) {
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

// Close stops the informer and waits for it; ValidatorStates then fails.
func (k *Kube) Close() {
	k.stopOnce.Do(func() {
		k.synced.Store(false)
		close(k.stop)
		k.factory.Shutdown()
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

// ApplyValidator creates or updates the Validator resource (an update keeps
// annotations, status and the pruning schedule), then writes the Secrets
// whose values are given.
func (k *Kube) ApplyValidator(ctx context.Context, v domain.Validator, secrets domain.ValidatorSecrets) error {
	return translate(fmt.Sprintf("apply validator %q", v.Name), k.applyValidator(ctx, v, secrets))
}

func (k *Kube) applyValidator(ctx context.Context, v domain.Validator, secrets domain.ValidatorSecrets) error {
	if v.Name == "" {
		return domain.Invalid("name", "must not be empty")
	}
	slots := secretSlots(v.Name, secrets)
	present := map[string]bool{}
	for _, s := range slots {
		if s.value != "" {
			present[s.field] = true
			continue
		}
		_, err := k.core.CoreV1().Secrets(k.namespace).Get(ctx, s.name, metav1.GetOptions{})
		switch {
		case err == nil:
			present[s.field] = true
		case !apierrors.IsNotFound(err):
			return redact(err)
		}
	}

	var applied *unstructured.Unstructured
	err := retryWrite(func() error {
		cur, err := k.validators().Get(ctx, v.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			spec, err := validatorSpec(v, present, nil)
			if err != nil {
				return err
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": Group + "/" + Version,
				"kind":       Kind,
				"spec":       spec,
			}}
			obj.SetName(v.Name)
			obj.SetNamespace(k.namespace)
			obj.SetLabels(labelsFor(v.Name))
			applied, err = k.validators().Create(ctx, obj, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		obj := cur.DeepCopy()
		prune, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "participantPruningSchedule")
		spec, err := validatorSpec(v, present, prune)
		if err != nil {
			return err
		}
		obj.Object["spec"] = spec
		obj.SetLabels(mergeLabels(obj.GetLabels(), labelsFor(v.Name)))
		applied, err = k.validators().Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	owner := ownerReference(v.Name, applied.GetUID())
	for _, s := range slots {
		if s.value == "" {
			continue
		}
		if err := k.writeSecret(ctx, s, owner); err != nil {
			return err
		}
	}
	return nil
}

// writeSecret sets one key of one Secret, creating the Secret when absent.
// Its errors carry no server message (it could quote the value).
func (k *Kube) writeSecret(ctx context.Context, s secretSlot, owner metav1.OwnerReference) error {
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
	return stateFromObject(obj), nil
}

// ValidatorStates reads every managed validator's state from the informer's cache.
func (k *Kube) ValidatorStates(context.Context) (map[string]domain.ValidatorState, error) {
	if !k.synced.Load() {
		return nil, domain.Unavailable("cluster: the validator cache is not started (or the gateway is closed)")
	}
	objs, err := k.lister.List(labels.Everything())
	if err != nil {
		return nil, translate("list validators", err)
	}
	out := make(map[string]domain.ValidatorState, len(objs))
	for _, o := range objs {
		// Cached objects are shared: read them, never change them.
		if u, ok := o.(*unstructured.Unstructured); ok {
			out[u.GetName()] = stateFromObject(u)
		}
	}
	return out, nil
}

func stateFromObject(u *unstructured.Unstructured) domain.ValidatorState {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	return stateOf(u.GetAnnotations(), spec, status)
}

// ApplyPruneSchedule writes spec.participantPruningSchedule; nil removes it.
func (k *Kube) ApplyPruneSchedule(ctx context.Context, validator string, p *domain.PruneSchedule) error {
	return translate(fmt.Sprintf("apply pruning schedule of %q", validator), retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := k.validators().Get(ctx, validator, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return domain.NotFound("validator %q does not exist in the cluster", validator)
		}
		if err != nil {
			return err
		}
		obj := cur.DeepCopy()
		if p == nil {
			if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "participantPruningSchedule"); !found {
				return nil
			}
			unstructured.RemoveNestedField(obj.Object, "spec", "participantPruningSchedule")
		} else if err := unstructured.SetNestedMap(obj.Object, pruneSpec(p), "spec", "participantPruningSchedule"); err != nil {
			return err
		}
		_, err = k.validators().Update(ctx, obj, metav1.UpdateOptions{})
		return err
	}))
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

// ApplyBackupSchedule creates or updates the backup CronJob (and the backup
// PVC when absent); a Deleted schedule suspends the CronJob.
func (k *Kube) ApplyBackupSchedule(ctx context.Context, b domain.BackupSchedule) error {
	return translate(fmt.Sprintf("apply backup schedule of %q", b.Validator), k.applyBackupSchedule(ctx, b))
}

func (k *Kube) applyBackupSchedule(ctx context.Context, b domain.BackupSchedule) error {
	if err := checkBackupSchedule(b); err != nil {
		return err
	}
	v, err := k.validators().Get(ctx, b.Validator, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return domain.NotFound("validator %q does not exist in the cluster", b.Validator)
	}
	if err != nil {
		return err
	}
	spec, _, _ := unstructured.NestedMap(v.Object, "spec")
	if external, _ := spec["externalDatabase"].(bool); external && !b.Deleted {
		return domain.Invalid("databaseConfig.external", "validator %q uses an external database; backups cover the internal one only", b.Validator)
	}
	if !b.Deleted {
		pvc := backupPVC(k.namespace, b.Validator, k.backupSize, configString(spec, "clusterConfig", "pvcVolumeStorageClass"))
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
	want := backupCronJob(backupTarget{
		namespace:    k.namespace,
		validator:    b.Validator,
		uid:          v.GetUID(),
		image:        k.image,
		cron:         b.Cron,
		maxBackups:   b.MaxBackups,
		suspend:      b.Deleted,
		databaseUser: configString(spec, "databaseConfig", "username"),
	})
	api := k.core.BatchV1().CronJobs(k.namespace)
	return retryWrite(func() error {
		cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cj := cur.DeepCopy()
		cj.Spec = *want.Spec.DeepCopy()
		cj.Labels = mergeLabels(cj.Labels, want.Labels)
		cj.OwnerReferences = withOwner(cj.OwnerReferences, want.OwnerReferences[0])
		_, err = api.Update(ctx, cj, metav1.UpdateOptions{})
		return err
	})
}

// Ping asks the API server for its version.
func (k *Kube) Ping(ctx context.Context) error {
	disc := k.core.Discovery()
	var err error
	if rc := disc.RESTClient(); rc != nil {
		err = rc.Get().AbsPath("/version").Do(ctx).Error()
	} else {
		_, err = disc.ServerVersion()
	}
	return translate("ping", err)
}
