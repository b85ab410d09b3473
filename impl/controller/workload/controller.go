package workload

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/podrefs"
)

// FieldOwner is the field manager of everything the controller applies:
// the process's one (the cache keeps a digest of what it applied).
const FieldOwner = cluster.FieldOwner

// Options configure the controller.
type Options struct {
	// MaxConcurrentReconciles is the number of workers (validators
	// reconciled at once; one validator is never reconciled by two at
	// once). 0 means 1.
	MaxConcurrentReconciles int
}

// Reconciler keeps each Validator's workloads as Desired says and writes
// its status from them.
type Reconciler struct {
	client client.Client
	// fresh reads the Validator from the API server before its status is
	// written (SetupWithManager: the manager's API reader; else client).
	fresh client.Reader
	// validators reads the cached Validators, decoded from the one form
	// the cache holds them in (cluster.ValidatorCache).
	validators *cluster.ValidatorCache
	// pods is the records of each validator's Pods, workloads those of
	// its Deployments, StatefulSets and Services, claims those of the
	// PersistentVolumeClaims, secrets the keys of the Secrets that exist,
	// kept by their watches (SetupWithManager).
	pods      *pods
	workloads *workloads
	claims    *claims
	secrets   *secrets
	options   Options
}

// New is a Reconciler that reads and writes through c (the manager's
// client: reads come from its cache).
func New(c client.Client, opts Options) *Reconciler {
	return &Reconciler{client: c, options: opts}
}

// SetupWithManager registers the controller with mgr: it reconciles a
// Validator when it changes (its generation or its status), when one of the workloads it
// controls changes or is deleted, so that hand edits and deletions are
// corrected, and when one of its Pods or a Secret or ConfigMap its pod
// templates read changes, so that its status says why a pod cannot start.
// The scheme of mgr must hold v1alpha1 (v1alpha1.AddToScheme) and the apps
// and core groups.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	r.fresh = mgr.GetAPIReader()
	var err error
	if r.validators, err = cluster.NewValidatorCache(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	r.validators.AddIndex(context.Background(), func(v *v1alpha1.Validator) []string {
		var out []string
		for _, t := range templates(Desired(v)) {
			for _, ref := range podrefs.All(&t.spec.Spec) {
				out = append(out, refKey(v.Namespace, ref.Kind, ref.Name))
			}
		}
		return out
	})
	r.pods, r.workloads, r.secrets, r.claims = newPods(), newWorkloads(), newSecrets(), newClaims()
	return ctrl.NewControllerManagedBy(mgr).
		Named("workload").
		// A new status too: one the cache was behind on (writeStatus).
		// A Validator's change, once r.validators, which the reconcile
		// reads, shows it.
		WatchesRawSource(r.validators.Source(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, statusChanged))).
		// The cache keeps workloads and Pods as records
		// (cluster.WorkloadRecord, cluster.PodRecord), which the typed
		// client does not read: r.workloads and r.pods keep them. A
		// workload's change reconciles the Validator that controls it, as
		// Owns would.
		Watches(&appsv1.Deployment{}, r.workloads.events(deploymentKind)).
		Watches(&appsv1.StatefulSet{}, r.workloads.events(statefulSetKind)).
		Watches(&corev1.Service{}, r.workloads.events(serviceKind)).
		Watches(&corev1.Pod{}, r.pods.events()).
		Watches(&corev1.PersistentVolumeClaim{}, r.claims.events()).
		// Whether a Secret exists is all the status needs: the Manager's
		// cache holds Secrets as records (cluster.SecretRecord), one
		// informer shared with the gateway and the intent controller;
		// r.secrets keeps their keys.
		Watches(&corev1.Secret{}, r.secrets.events(r.readers(podrefs.Secret))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.readers(podrefs.ConfigMap)), builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.options.MaxConcurrentReconciles, 1)}).
		Complete(r)
}

// statusChanged passes a Validator whose status changed (its encoding:
// the cache's, as stored).
var statusChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := cluster.ValidatorStatus(e.ObjectOld)
		cur, ok2 := cluster.ValidatorStatus(e.ObjectNew)
		return !ok1 || !ok2 || !bytes.Equal(old, cur)
	},
}

// refKey is what r.validators files a Validator under for each Secret and
// ConfigMap its pod templates read.
func refKey(namespace string, kind podrefs.Kind, name string) string {
	return namespace + "/" + string(kind) + "/" + name
}

// readers maps a Secret or ConfigMap to the Validators whose pods read it.
func (r *Reconciler) readers(kind podrefs.Kind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		keys := r.validators.ByIndex(refKey(o.GetNamespace(), kind, o.GetName()))
		out := make([]reconcile.Request, 0, len(keys))
		for _, k := range keys {
			out = append(out, reconcile.Request{NamespacedName: k})
		}
		return out
	}
}

// template is a component's pod template.
type template struct {
	component string
	spec      *corev1.PodTemplateSpec
}

// templates are the pod templates of the workloads among objs.
func templates(objs []client.Object) []template {
	var out []template
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.Deployment:
			out = append(out, template{w.Labels[ComponentLabel], &w.Spec.Template})
		case *appsv1.StatefulSet:
			out = append(out, template{w.Labels[ComponentLabel], &w.Spec.Template})
		}
	}
	return out
}

// Reconcile applies the validator's workloads, deletes those its
// configuration no longer wants, and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	defer func() {
		if ctx.Err() != nil {
			// Stopping: the next process reconciles again, no error to report.
			res, err = ctrl.Result{}, nil
		}
	}()
	v, err := r.validators.Get(req.NamespacedName)
	if err != nil {
		// Gone: the garbage collector deletes what it owned.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !v.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	desired := Desired(v)
	for _, obj := range desired {
		if err := r.apply(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, obj := range Unwanted(v) {
		if err := r.deleteOwned(ctx, v, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.growDataClaim(ctx, v); err != nil {
		return ctrl.Result{}, err
	}
	observed, err := r.observe(ctx, v, desired)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.writeStatus(ctx, v, observed)
}

// writeStatus writes v's status from observed, unless it says so already.
// A status the cache holds is not written again (a restart reads and writes
// nothing): should the cache be behind the API server, the status it then
// receives reconciles the Validator again (SetupWithManager). A status to
// write is compared with and patched on the Validator as the API server has
// it: a status equal to a stale one would not be written, or a merge patch
// from it would leave out fields that seem unchanged (a phase, with new
// conditions).
func (r *Reconciler) writeStatus(ctx context.Context, cached *v1alpha1.Validator, observed Observed) error {
	if equality.Semantic.DeepEqual(Status(cached, observed), cached.Status) {
		return nil
	}
	reader := r.fresh
	if reader == nil {
		reader = r.client
	}
	var v v1alpha1.Validator
	if err := reader.Get(ctx, client.ObjectKeyFromObject(cached), &v); err != nil {
		return client.IgnoreNotFound(err)
	}
	if v.Generation != cached.Generation || v.UID != cached.UID {
		return nil // a newer spec: its event reconciles again
	}
	status := Status(&v, observed)
	if equality.Semantic.DeepEqual(status, v.Status) {
		return nil
	}
	orig := v.DeepCopy()
	v.Status = status
	if err := r.client.Status().Patch(ctx, &v, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("status of validator %s: %w", v.Name, client.IgnoreNotFound(err))
	}
	log.FromContext(ctx).V(1).Info("status", "phase", status.Phase, "databaseReady", status.DatabaseReady)
	return nil
}

// apply writes obj by server-side apply as FieldOwner, taking over fields
// someone changed by hand (drift is corrected, not reported as a conflict),
// unless the cache says the object holds it already.
func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		return r.createClaim(ctx, claim)
	}
	if st, ok := obj.(*appsv1.StatefulSet); ok {
		r.keepClaimTemplates(st)
	}
	req, err := cluster.NewApplyRequest(obj, toUnstructured)
	if err != nil {
		return err
	}
	k := kindOf(obj)
	// The record says whether the object holds what the request applies
	// (cluster.ApplyRequest.Applied); one behind the API server makes an
	// apply that changes nothing.
	seen := r.workloads.lookup(k, client.ObjectKeyFromObject(obj))
	if seen.record != nil && req.Applied(seen.record) {
		return nil
	}
	u, err := req.Object()
	if err != nil {
		return err
	}
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", u.GetKind(), obj.GetName(), err)
	}
	if k == "" {
		return nil
	}
	// u is the API server's answer now: the object as it holds it.
	answer := k.object()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, answer); err != nil {
		return fmt.Errorf("answer to the apply of %s %s: %w", u.GetKind(), obj.GetName(), err)
	}
	r.workloads.answered(k, seen, cluster.RecordWorkload(answer))
	return nil
}

// record is the cache's record of the workload obj names, nil when there
// is none.
func (r *Reconciler) record(obj client.Object) *cluster.WorkloadRecord {
	return r.workloads.get(kindOf(obj), client.ObjectKeyFromObject(obj))
}

// createClaim creates claim unless it exists: a claim's spec is immutable
// once bound, and an existing one (kept from before, or resized by an
// operator) is the one to use.
func (r *Reconciler) createClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if r.claims.get(client.ObjectKeyFromObject(claim)) != nil {
		return nil
	}
	err := r.client.Create(ctx, claim, client.FieldOwner(FieldOwner))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolumeClaim %s: %w", claim.Name, err)
	}
	return nil
}

// keepClaimTemplates keeps an existing StatefulSet's volume claim templates:
// Kubernetes forbids changing them, so a new storage size or class reaches
// the database through its claim (growDataClaim), not the template.
func (r *Reconciler) keepClaimTemplates(st *appsv1.StatefulSet) {
	cur := r.record(st)
	if cur == nil {
		return
	}
	st.Spec.VolumeClaimTemplates = make([]corev1.PersistentVolumeClaim, len(cur.ClaimTemplates))
	for i := range cur.ClaimTemplates {
		cur.ClaimTemplates[i].DeepCopyInto(&st.Spec.VolumeClaimTemplates[i])
		// Apply sends what the server would default anyway.
		st.Spec.VolumeClaimTemplates[i].Status = corev1.PersistentVolumeClaimStatus{}
	}
}

// growDataClaim raises the internal database's claim to spec.databaseStorage
// when that is larger (volumes grow, never shrink; the storage class must
// allow expansion, else the API server refuses and the error is retried).
func (r *Reconciler) growDataClaim(ctx context.Context, v *v1alpha1.Validator) error {
	if v.Spec.ExternalDatabase || v.Spec.DatabaseStorage == "" {
		return nil
	}
	want, err := resource.ParseQuantity(v.Spec.DatabaseStorage)
	if err != nil {
		return nil // the API validated it; a bad one must not block the rest
	}
	cur := r.claims.get(types.NamespacedName{Namespace: v.Namespace, Name: DataClaimName(v.Name)})
	if cur == nil || cur.Storage.Cmp(want) >= 0 {
		return nil
	}
	// A merge patch of the request alone: the claim's other fields are
	// not the controller's.
	patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{%q:%q}}}}`, corev1.ResourceStorage, want.String())
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: cur.Namespace, Name: cur.Name}}
	if err := r.client.Patch(ctx, pvc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("grow claim %s to %s: %w", cur.Name, v.Spec.DatabaseStorage, err)
	}
	return nil
}

// deleteOwned deletes obj when it exists and v controls it; an object of
// the same name that someone else made is left alone.
func (r *Reconciler) deleteOwned(ctx context.Context, v *v1alpha1.Validator, obj client.Object) error {
	cur := r.record(obj)
	if cur == nil || !controlledBy(cur, v) {
		return nil
	}
	if err := r.client.Delete(ctx, obj, client.Preconditions{UID: &cur.UID}); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

func (r *Reconciler) observe(ctx context.Context, v *v1alpha1.Validator, desired []client.Object) (Observed, error) {
	// v's workload of kind k for component, nil unless v controls it.
	get := func(k kind, component string) *cluster.WorkloadRecord {
		w := r.workloads.get(k, types.NamespacedName{Namespace: v.Namespace, Name: Name(v.Name, component)})
		if w == nil || !controlledBy(w, v) {
			return nil
		}
		return w
	}
	o := Observed{
		Participant: get(deploymentKind, Participant), ValidatorApp: get(deploymentKind, ValidatorApp),
		WalletUI: get(deploymentKind, WalletUI), ANSUI: get(deploymentKind, ANSUI),
		Postgres: get(statefulSetKind, Postgres),
		Pods:     r.pods.of(types.NamespacedName{Namespace: v.Namespace, Name: v.Name}),
	}
	var err error
	o.Missing, err = r.missing(ctx, v.Namespace, templates(desired))
	return o, err
}

// missing lists, per component, the Secrets and ConfigMaps its template
// reads (not optionally) that do not exist.
func (r *Reconciler) missing(ctx context.Context, namespace string, ts []template) (map[string][]podrefs.Ref, error) {
	out := map[string][]podrefs.Ref{}
	for _, t := range ts {
		for _, ref := range podrefs.All(&t.spec.Spec) {
			if ref.Optional || slices.ContainsFunc(out[t.component], func(m podrefs.Ref) bool { return m.Kind == ref.Kind && m.Name == ref.Name }) {
				continue
			}
			key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
			if ref.Kind == podrefs.Secret {
				if !r.secrets.has(key) {
					out[t.component] = append(out[t.component], ref)
				}
				continue
			}
			err := r.client.Get(ctx, key, configMapMeta())
			switch {
			case apierrors.IsNotFound(err):
				out[t.component] = append(out[t.component], ref)
			case err != nil:
				return nil, fmt.Errorf("read %s %s: %w", ref.Kind, ref.Name, err)
			}
		}
	}
	return out, nil
}

// configMapMeta is what a ConfigMap is read into from the cache: its
// metadata, which its watch fills (Secrets are in r.secrets).
func configMapMeta() client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(podrefs.ConfigMap)))
	return m
}

func controlledBy(obj client.Object, v *v1alpha1.Validator) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == v.UID
}

// toUnstructured is obj as an apply request: its type, metadata and spec,
// without the fields a typed object always carries but apply must not
// claim (status, creationTimestamp).
func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	if templates, ok, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates"); ok {
		for _, t := range templates {
			if tm, ok := t.(map[string]any); ok {
				delete(tm, "status")
				unstructured.RemoveNestedField(tm, "metadata", "creationTimestamp")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, templates, "spec", "volumeClaimTemplates")
	}
	return u, nil
}
