package workload

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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
// the process's one.
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
	// client reads from the Manager's cache, each read after the cache
	// has seen the controller's own writes before it (read-your-writes),
	// so that a reconcile never applies again what the last one applied.
	client client.Client
	// fresh reads the Validator from the API server before its status is
	// written.
	fresh   client.Reader
	options Options
}

// New is a Reconciler; SetupWithManager gives it the Manager's cache.
func New(opts Options) *Reconciler {
	return &Reconciler{options: opts}
}

// refsField is the index of the Validators by the Secrets and ConfigMaps
// their pod templates read (refKey).
const refsField = "workload.validator-manager.io/pod-refs"

// SetupWithManager registers the controller with mgr: it reconciles a
// Validator when it changes (its generation or its status), when one of the workloads it
// controls changes or is deleted, so that hand edits and deletions are
// corrected, and when one of its Pods or a Secret or ConfigMap its pod
// templates read changes, so that its status says why a pod cannot start.
// The scheme of mgr must hold v1alpha1 (v1alpha1.AddToScheme) and the apps
// and core groups.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	var err error
	r.client, err = client.New(mgr.GetConfig(), client.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		Cache: &client.CacheOptions{Reader: mgr.GetCache(), EnableReadYourWritesConsistency: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	r.fresh = mgr.GetAPIReader()
	err = mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Validator{}, refsField, func(o client.Object) []string {
		v, ok := o.(*v1alpha1.Validator)
		if !ok {
			return nil
		}
		var out []string
		for _, t := range templates(Desired(v)) {
			for _, ref := range podrefs.All(&t.spec.Spec) {
				out = append(out, refKey(ref.Kind, ref.Name))
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workload").
		// A new status too: one the cache was behind on (writeStatus);
		// and the cache's resync (resync.go).
		For(&v1alpha1.Validator{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, statusChanged, resynced))).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		// A Pod queues the Validator it belongs to when it comes or goes,
		// or when why it cannot start changes.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podValidator), builder.WithPredicates(podChanged)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.readers(podrefs.Secret))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.readers(podrefs.ConfigMap)), builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.options.MaxConcurrentReconciles, 1)}).
		Complete(r)
}

// statusChanged passes a Validator whose status changed.
var statusChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*v1alpha1.Validator)
		cur, ok2 := e.ObjectNew.(*v1alpha1.Validator)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(old.Status, cur.Status)
	},
}

// podValidator is the Validator a Pod belongs to (its ValidatorLabel).
func podValidator(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[ValidatorLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// podChanged passes a Pod's update when it moved to another validator or
// what it tells the status (cause) changed.
var podChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*corev1.Pod)
		cur, ok2 := e.ObjectNew.(*corev1.Pod)
		return !ok1 || !ok2 || old.Labels[ValidatorLabel] != cur.Labels[ValidatorLabel] || cause(old) != cause(cur)
	},
}

// cause is what a Pod tells the status: why it cannot start, if it counts
// ("" for a terminating Pod).
func cause(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return ""
	}
	reason, message := StartFailure(p)
	return reason + ": " + message
}

// refKey is what the Validators are indexed under (refsField) for each
// Secret and ConfigMap their pod templates read.
func refKey(kind podrefs.Kind, name string) string {
	return string(kind) + "/" + name
}

// readers maps a Secret or ConfigMap to the Validators whose pods read it.
func (r *Reconciler) readers(kind podrefs.Kind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var l v1alpha1.ValidatorList
		if err := r.client.List(ctx, &l, client.InNamespace(o.GetNamespace()), client.MatchingFields{refsField: refKey(kind, o.GetName())},
			client.UnsafeDisableDeepCopy, client.DisableReadYourWritesConsistency); err != nil {
			log.FromContext(ctx).Error(err, "validators reading", "kind", kind, "name", o.GetName())
			return nil
		}
		out := make([]reconcile.Request, 0, len(l.Items))
		for _, v := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&v)})
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
	v := &v1alpha1.Validator{}
	if err := r.client.Get(ctx, req.NamespacedName, v); err != nil {
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
// unless the cached object holds what it would apply (upToDate).
func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		return r.createClaim(ctx, claim)
	}
	cur, err := r.get(ctx, obj)
	if err != nil {
		return err
	}
	if st, ok := obj.(*appsv1.StatefulSet); ok && cur != nil {
		keepClaimTemplates(st, cur.(*appsv1.StatefulSet))
	}
	req, err := newApplyRequest(obj)
	if err != nil {
		return err
	}
	if cur != nil && req.upToDate(cur) {
		return nil
	}
	if err := r.client.Apply(ctx, req.config, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}

// get is the cached object of obj's kind and key, nil when there is none.
func (r *Reconciler) get(ctx context.Context, obj client.Object) (client.Object, error) {
	cur := obj.DeepCopyObject().(client.Object)
	err := r.client.Get(ctx, client.ObjectKeyFromObject(obj), cur)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", obj.GetName(), err)
	}
	return cur, nil
}

// createClaim creates claim unless it exists: a claim's spec is immutable
// once bound, and an existing one (kept from before, or resized by an
// operator) is the one to use.
func (r *Reconciler) createClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	cur, err := r.get(ctx, claim)
	if err != nil || cur != nil {
		return err
	}
	err = r.client.Create(ctx, claim, client.FieldOwner(FieldOwner))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolumeClaim %s: %w", claim.Name, err)
	}
	return nil
}

// keepClaimTemplates keeps cur's volume claim templates in st: Kubernetes
// forbids changing them, so a new storage size or class reaches the
// database through its claim (growDataClaim), not the template.
func keepClaimTemplates(st, cur *appsv1.StatefulSet) {
	st.Spec.VolumeClaimTemplates = make([]corev1.PersistentVolumeClaim, len(cur.Spec.VolumeClaimTemplates))
	for i := range cur.Spec.VolumeClaimTemplates {
		cur.Spec.VolumeClaimTemplates[i].DeepCopyInto(&st.Spec.VolumeClaimTemplates[i])
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
	cur := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: DataClaimName(v.Name)}, cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	if have := cur.Spec.Resources.Requests[corev1.ResourceStorage]; have.Cmp(want) >= 0 {
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
	cur, err := r.get(ctx, obj)
	if err != nil || cur == nil || !controlledBy(cur, v) {
		return err
	}
	uid := cur.GetUID()
	if err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

func (r *Reconciler) observe(ctx context.Context, v *v1alpha1.Validator, desired []client.Object) (Observed, error) {
	var o Observed
	deployments := map[string]**appsv1.Deployment{Participant: &o.Participant, ValidatorApp: &o.ValidatorApp, WalletUI: &o.WalletUI, ANSUI: &o.ANSUI}
	for component, into := range deployments {
		d := &appsv1.Deployment{}
		if ok, err := r.owned(ctx, v, component, d); err != nil {
			return o, err
		} else if ok {
			*into = d
		}
	}
	st := &appsv1.StatefulSet{}
	if ok, err := r.owned(ctx, v, Postgres, st); err != nil {
		return o, err
	} else if ok {
		o.Postgres = st
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(v.Namespace), client.MatchingLabels{ValidatorLabel: v.Name}); err != nil {
		return o, fmt.Errorf("list pods: %w", err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range pods.Items {
		o.Pods = append(o.Pods, &pods.Items[i])
	}
	var err error
	o.Missing, err = r.missing(ctx, v.Namespace, templates(desired))
	return o, err
}

// owned reads v's workload of component into obj: false unless it exists
// and v controls it.
func (r *Reconciler) owned(ctx context.Context, v *v1alpha1.Validator, component string, obj client.Object) (bool, error) {
	err := r.client.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: Name(v.Name, component)}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", Name(v.Name, component), err)
	}
	return controlledBy(obj, v), nil
}

// missing lists, per component, what its template reads (not optionally)
// that is not there (podrefs.Lacking): the Secrets and ConfigMaps that do
// not exist and the keys an existing Secret lacks. A ConfigMap's keys are
// not checked: the cache holds its metadata only.
func (r *Reconciler) missing(ctx context.Context, namespace string, ts []template) (map[string][]podrefs.Ref, error) {
	held := map[podrefs.Object][]string{}
	read := map[podrefs.Object]bool{}
	out := map[string][]podrefs.Ref{}
	for _, t := range ts {
		refs := podrefs.All(&t.spec.Spec)
		for i, ref := range refs {
			o := podrefs.Object{Kind: ref.Kind, Name: ref.Name}
			if ref.Kind == podrefs.ConfigMap {
				refs[i].Keys = nil
			}
			if ref.Optional || read[o] {
				continue
			}
			read[o] = true
			key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
			var obj client.Object = &corev1.Secret{}
			if ref.Kind == podrefs.ConfigMap {
				obj = configMapMeta()
			}
			err := r.client.Get(ctx, key, obj)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, fmt.Errorf("read %s %s: %w", ref.Kind, ref.Name, err)
			}
			held[o] = nil
			if s, ok := obj.(*corev1.Secret); ok {
				held[o] = slices.Collect(maps.Keys(s.Data))
			}
		}
		if l := podrefs.Lacking(refs, held); len(l) > 0 {
			out[t.component] = l
		}
	}
	return out, nil
}

// configMapMeta is what a ConfigMap is read into from the cache: its
// metadata, which its watch fills.
func configMapMeta() client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(podrefs.ConfigMap)))
	return m
}

func controlledBy(obj client.Object, v *v1alpha1.Validator) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == v.UID
}
