package workload

import (
	"context"
	"fmt"

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
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// FieldOwner is the field manager of everything the controller applies.
const FieldOwner = "validator-manager"

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
	client  client.Client
	options Options
}

// New is a Reconciler that reads and writes through c (the manager's
// client: reads come from its cache).
func New(c client.Client, opts Options) *Reconciler {
	return &Reconciler{client: c, options: opts}
}

// SetupWithManager registers the controller with mgr: it reconciles a
// Validator when it changes (its generation) and when one of the
// workloads it controls changes or is deleted, so that hand edits and
// deletions are corrected. The scheme of mgr must hold v1alpha1
// (v1alpha1.AddToScheme) and the apps and core groups.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workload").
		For(&v1alpha1.Validator{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.options.MaxConcurrentReconciles, 1)}).
		Complete(r)
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
	var v v1alpha1.Validator
	if err := r.client.Get(ctx, req.NamespacedName, &v); err != nil {
		// Gone: the garbage collector deletes what it owned.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !v.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	for _, obj := range Desired(&v) {
		if err := r.apply(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, obj := range Unwanted(&v) {
		if err := r.deleteOwned(ctx, &v, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.growDataClaim(ctx, &v); err != nil {
		return ctrl.Result{}, err
	}
	observed, err := r.observe(ctx, &v)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := Status(&v, observed)
	if equality.Semantic.DeepEqual(status, v.Status) {
		return ctrl.Result{}, nil
	}
	orig := v.DeepCopy()
	v.Status = status
	if err := r.client.Status().Patch(ctx, &v, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("status of validator %s: %w", req.Name, client.IgnoreNotFound(err))
	}
	log.FromContext(ctx).V(1).Info("status", "phase", status.Phase, "databaseReady", status.DatabaseReady)
	return ctrl.Result{}, nil
}

// apply writes obj by server-side apply as FieldOwner, taking over fields
// someone changed by hand (drift is corrected, not reported as a conflict).
func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		return r.createClaim(ctx, claim)
	}
	if st, ok := obj.(*appsv1.StatefulSet); ok {
		if err := r.keepClaimTemplates(ctx, st); err != nil {
			return err
		}
	}
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", u.GetKind(), obj.GetName(), err)
	}
	return nil
}

// createClaim creates claim unless it exists: a claim's spec is immutable
// once bound, and an existing one (kept from before, or resized by an
// operator) is the one to use.
func (r *Reconciler) createClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	err := r.client.Get(ctx, client.ObjectKeyFromObject(claim), &corev1.PersistentVolumeClaim{})
	if !apierrors.IsNotFound(err) {
		return client.IgnoreNotFound(err)
	}
	err = r.client.Create(ctx, claim, client.FieldOwner(FieldOwner))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolumeClaim %s: %w", claim.Name, err)
	}
	return nil
}

// keepClaimTemplates keeps an existing StatefulSet's volume claim templates:
// Kubernetes forbids changing them, so a new storage size or class reaches
// the database through its claim (growDataClaim), not the template.
func (r *Reconciler) keepClaimTemplates(ctx context.Context, st *appsv1.StatefulSet) error {
	var cur appsv1.StatefulSet
	err := r.client.Get(ctx, client.ObjectKeyFromObject(st), &cur)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read StatefulSet %s: %w", st.Name, err)
	}
	st.Spec.VolumeClaimTemplates = cur.Spec.VolumeClaimTemplates
	for i := range st.Spec.VolumeClaimTemplates {
		// Apply sends what the server would default anyway.
		st.Spec.VolumeClaimTemplates[i].Status = corev1.PersistentVolumeClaimStatus{}
	}
	return nil
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
	var pvc corev1.PersistentVolumeClaim
	err = r.client.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: DataClaimName(v.Name)}, &pvc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read claim %s: %w", DataClaimName(v.Name), err)
	}
	have := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if have.Cmp(want) >= 0 {
		return nil
	}
	orig := pvc.DeepCopy()
	if pvc.Spec.Resources.Requests == nil {
		pvc.Spec.Resources.Requests = corev1.ResourceList{}
	}
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
	if err := r.client.Patch(ctx, &pvc, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("grow claim %s to %s: %w", pvc.Name, v.Spec.DatabaseStorage, err)
	}
	return nil
}

// deleteOwned deletes obj when it exists and v controls it; an object of
// the same name that someone else made is left alone.
func (r *Reconciler) deleteOwned(ctx context.Context, v *v1alpha1.Validator, obj client.Object) error {
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.UID != v.UID {
		return nil
	}
	if err := r.client.Delete(ctx, obj, client.Preconditions{UID: &[]types.UID{obj.GetUID()}[0]}); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

func (r *Reconciler) observe(ctx context.Context, v *v1alpha1.Validator) (Observed, error) {
	var o Observed
	getDeployment := func(component string) (*appsv1.Deployment, error) {
		var d appsv1.Deployment
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: Name(v.Name, component)}, &d); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if !controlledBy(&d, v) {
			return nil, nil
		}
		return &d, nil
	}
	var err error
	if o.Participant, err = getDeployment(Participant); err != nil {
		return o, err
	}
	if o.ValidatorApp, err = getDeployment(ValidatorApp); err != nil {
		return o, err
	}
	if o.WalletUI, err = getDeployment(WalletUI); err != nil {
		return o, err
	}
	if o.ANSUI, err = getDeployment(ANSUI); err != nil {
		return o, err
	}
	var st appsv1.StatefulSet
	err = r.client.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: Name(v.Name, Postgres)}, &st)
	switch {
	case err == nil && controlledBy(&st, v):
		o.Postgres = &st
	case err != nil && !apierrors.IsNotFound(err):
		return o, err
	}
	return o, nil
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
