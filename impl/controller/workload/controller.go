package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/backoff"
	"github.com/validator-manager/validator-manager/impl/podrefs"
)

// FieldOwner is the field manager of everything the controller applies.
const FieldOwner = cluster.FieldOwner

// Options configure the controller.
type Options struct {
	// MaxConcurrentReconciles is the number of workers; 0 means 1.
	MaxConcurrentReconciles int
	// Renderer lays out each Validator's objects; nil is BuiltIn. With the
	// chart renderer the cache must see other namespaces (cluster.ReleaseCache).
	Renderer Renderer
	// RenderBackoff is the first wait after a failed render (*RenderError),
	// doubling up to MaxRenderBackoff; 0 (or less) means 1s and 5m.
	RenderBackoff, MaxRenderBackoff time.Duration
}

// Reconciler keeps each Validator's workloads as its Renderer says and
// writes its status from them.
type Reconciler struct {
	// client reads the cache with read-your-writes, so that a reconcile
	// never applies again what the last one applied.
	client client.Client
	// fresh reads the API server: the Validator before its status is
	// written, and the namespaces (which the cache does not hold).
	fresh   client.Reader
	options Options
	// backoff spaces the renders of a validator whose render fails.
	backoff workqueue.TypedRateLimiter[reconcile.Request]
}

// New is a Reconciler; SetupWithManager gives it the Manager's cache.
func New(opts Options) *Reconciler {
	opts.Renderer = cmp.Or(opts.Renderer, Renderer(BuiltIn{}))
	if opts.RenderBackoff <= 0 {
		opts.RenderBackoff = time.Second
	}
	if opts.MaxRenderBackoff <= 0 {
		opts.MaxRenderBackoff = 5 * time.Minute
	}
	backoff := workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](opts.RenderBackoff, opts.MaxRenderBackoff)
	return &Reconciler{options: opts, backoff: backoff}
}

// refsField indexes the Validators by the Secrets and ConfigMaps their pod
// templates read (kindName).
const refsField = "workload.validator-manager.io/pod-refs"

// validatorField indexes the kinds listed per validator by ValidatorLabel,
// so that a list does not scan every object of its kind in the namespace.
const validatorField = "workload.validator-manager.io/validator"

// SetupWithManager registers the controller with mgr (whose scheme holds
// v1alpha1, apps and core). Objects map to their Validator by labels, not
// owner references: in chart mode they live in another namespace.
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
	_, builtIn := r.options.Renderer.(BuiltIn)
	err = mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Validator{}, refsField, func(o client.Object) []string {
		v, ok := o.(*v1alpha1.Validator)
		if !ok || !builtIn {
			// A chart's Secrets are labelled with their validator.
			return nil
		}
		var out []string
		for _, obj := range Desired(v) {
			if t := PodTemplate(obj); t != nil {
				for _, ref := range podrefs.All(&t.Spec) {
					out = append(out, kindName(string(ref.Kind), ref.Name))
				}
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	})
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, metadata("Service"), metadata("ConfigMap"), &corev1.Pod{}} {
		err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, validatorField, func(o client.Object) []string {
			if name, ok := o.GetLabels()[ValidatorLabel]; ok {
				return []string{name}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	byLabel := handler.EnqueueRequestsFromMapFunc(labelled)
	return ctrl.NewControllerManagedBy(mgr).
		Named("workload").
		// A new status too: one the cache was behind on (writeStatus).
		For(&v1alpha1.Validator{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, statusChanged, resynced))).
		Watches(&appsv1.Deployment{}, byLabel).
		Watches(&appsv1.StatefulSet{}, byLabel).
		Watches(&corev1.Service{}, byLabel, builder.OnlyMetadata).
		Watches(&corev1.PersistentVolumeClaim{}, byLabel).
		// The database password's rotation (rotation.go).
		Watches(&batchv1.Job{}, byLabel).
		Watches(&corev1.Pod{}, byLabel, builder.WithPredicates(podChanged)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.readers(podrefs.Secret))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.readers(podrefs.ConfigMap)), builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.options.MaxConcurrentReconciles, 1),
			RateLimiter: backoff.RateLimiter[reconcile.Request](5 * time.Millisecond)}).
		Complete(r)
}

// resynced passes the cache's periodic resync, so that a validator whose
// event was missed is reconciled again within cluster.Resync.
var resynced = predicate.Not[client.Object](predicate.ResourceVersionChangedPredicate{})

// statusChanged passes a Validator whose status changed.
var statusChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*v1alpha1.Validator)
		cur, ok2 := e.ObjectNew.(*v1alpha1.Validator)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(old.Status, cur.Status)
	},
}

// labelled is the Validator an object's labels name; without
// ValidatorNamespaceLabel, in the object's own namespace.
func labelled(_ context.Context, o client.Object) []reconcile.Request {
	key, ok := validatorOf(o)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

func validatorOf(o client.Object) (types.NamespacedName, bool) {
	l := o.GetLabels()
	key := types.NamespacedName{Namespace: cmp.Or(l[ValidatorNamespaceLabel], o.GetNamespace()), Name: l[ValidatorLabel]}
	return key, key.Name != ""
}

// podChanged passes a Pod's update that moves it to another validator or
// changes its cause.
var podChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*corev1.Pod)
		cur, ok2 := e.ObjectNew.(*corev1.Pod)
		return !ok1 || !ok2 || old.Labels[ValidatorLabel] != cur.Labels[ValidatorLabel] || cause(old) != cause(cur)
	},
}

// cause is why a Pod cannot start ("" when terminating).
func cause(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return ""
	}
	reason, message := StartFailure(p)
	return reason + ": " + message
}

// readers maps a Secret or ConfigMap to the Validators whose pods read it.
func (r *Reconciler) readers(kind podrefs.Kind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetLabels()[ValidatorNamespaceLabel] != "" {
			return labelled(ctx, o)
		}
		var l v1alpha1.ValidatorList
		readers := client.MatchingFields{refsField: kindName(string(kind), o.GetName())}
		if err := r.client.List(ctx, &l, client.InNamespace(o.GetNamespace()), readers,
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

// PodTemplate is the pod template of obj, a Deployment or a StatefulSet;
// nil for any other kind.
func PodTemplate(obj client.Object) *corev1.PodTemplateSpec {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	}
	return nil
}

// ReleaseFinalizer is on a Validator whose workloads live in a release
// namespace (chart mode), which the controller deletes with it.
const ReleaseFinalizer = "validator-manager.io/release-namespace"

// Reasons of the Rendered condition besides a RenderError's.
const (
	ReasonRendered = "Rendered"
	// ReasonNamespaceMoved: the workloads run in another namespace than
	// the render's (chart mode switched); they are not moved.
	ReasonNamespaceMoved = "NamespaceMoved"
	// ReasonNamespaceConflict: the release namespace is not this validator's.
	ReasonNamespaceConflict = "NamespaceConflict"
)

// Reconcile renders, applies, prunes and writes the status. Nothing is
// applied unless the whole render succeeded: a failed one leaves what runs.
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
		return ctrl.Result{}, r.finalize(ctx, v)
	}
	l, err := r.options.Renderer.Render(ctx, v)
	if err == nil {
		err = r.prepare(ctx, v, l)
	}
	if re := (*RenderError)(nil); errors.As(err, &re) {
		if err := r.renderFailed(ctx, v, re); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: r.backoff.When(req)}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	r.backoff.Forget(req)
	rot, err := r.rotate(ctx, v, l) // rotation.go
	if err != nil {
		return ctrl.Result{}, err
	}
	withPassword(l.Objects, rot.digest)
	for _, obj := range l.Objects {
		stamp(v, l, obj)
		if err := r.apply(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.prune(ctx, v, l); err != nil {
		return ctrl.Result{}, err
	}
	if l.Namespace == v.Namespace {
		// Back from chart mode, its namespace gone (prepare).
		if err := r.patchFinalizer(ctx, v, controllerutil.RemoveFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.growDataClaim(ctx, v, l.Namespace); err != nil {
		return ctrl.Result{}, err
	}
	observed, err := r.observe(ctx, v, l)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.writeStatus(ctx, v, func(v *v1alpha1.Validator) v1alpha1.ValidatorStatus {
		st := Status(v, observed)
		st.Namespace, st.Charts = l.Namespace, l.Charts
		message := "the built-in layout"
		if len(l.Charts) > 0 {
			var charts []string
			for _, c := range l.Charts {
				charts = append(charts, fmt.Sprintf("%s:%s@%s", c.Reference, c.Version, c.Digest))
			}
			message = "charts " + strings.Join(charts, ", ")
		}
		setCondition(&st, v, v1alpha1.ConditionRendered, metav1.ConditionTrue, ReasonRendered, message)
		if rot.condition != nil {
			meta.SetStatusCondition(&st.Conditions, *rot.condition)
		}
		return st
	})
}

// prepare readies l's namespace (chart mode: the finalizer, the namespace).
// Workloads in another namespace are not moved: running a validator twice,
// or without its database, is worse than not running the new layout.
func (r *Reconciler) prepare(ctx context.Context, v *v1alpha1.Validator, l *Layout) error {
	old := cmp.Or(v.Status.Namespace, v.Namespace)
	if old != l.Namespace {
		held, err := r.holds(ctx, v, old)
		if err != nil {
			return err
		}
		if held {
			return &RenderError{Reason: ReasonNamespaceMoved, Message: fmt.Sprintf(
				"the validator's workloads run in namespace %s and are now laid out in namespace %s: they are not moved; "+
					"delete them (a release namespace: the namespace) to start them in %s", old, l.Namespace, l.Namespace)}
		}
	}
	if l.Namespace == v.Namespace {
		return nil
	}
	if err := r.patchFinalizer(ctx, v, controllerutil.AddFinalizer); err != nil {
		return err
	}
	return r.ensureNamespace(ctx, v, l.Namespace)
}

// holds tells whether namespace holds v's workloads: in v's own, applied
// Deployments or StatefulSets; a release namespace, by existing.
func (r *Reconciler) holds(ctx context.Context, v *v1alpha1.Validator, namespace string) (bool, error) {
	if namespace != v.Namespace {
		ns, err := r.namespace(ctx, v, namespace)
		return ns != nil, err
	}
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}} {
		objs, err := r.applied(ctx, v, namespace, list)
		if err != nil || len(objs) > 0 {
			return len(objs) > 0, err
		}
	}
	return false, nil
}

// namespace is namespace name if labelled as v's, nil when absent;
// another's is a RenderError.
func (r *Reconciler) namespace(ctx context.Context, v *v1alpha1.Validator, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	err := r.fresh.Get(ctx, types.NamespacedName{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read namespace %s: %w", name, err)
	}
	if key, ok := validatorOf(ns); !ok || key != client.ObjectKeyFromObject(v) || ns.Labels[ManagedByLabel] != ManagedBy {
		return nil, &RenderError{Reason: ReasonNamespaceConflict, Message: fmt.Sprintf("namespace %s exists and is not this validator's", name)}
	}
	return ns, nil
}

// ensureNamespace applies v's release namespace, labelled, unless it exists.
func (r *Reconciler) ensureNamespace(ctx context.Context, v *v1alpha1.Validator, name string) error {
	ns, err := r.namespace(ctx, v, name)
	switch {
	case err != nil:
		return err
	case ns != nil && ns.DeletionTimestamp != nil:
		return fmt.Errorf("namespace %s is being deleted", name)
	case ns != nil:
		return nil
	}
	apply := corev1ac.Namespace(name).WithLabels(ValidatorLabels(v))
	// Not read-your-writes: waiting for the cache would start an informer
	// of every namespace.
	if err := r.client.Apply(ctx, apply, client.FieldOwner(FieldOwner), client.ForceOwnership, client.DisableReadYourWritesConsistency); err != nil {
		return fmt.Errorf("apply namespace %s: %w", name, err)
	}
	return nil
}

// finalize deletes v's release namespace (or, while it holds claims, its
// workloads), then removes the finalizer.
func (r *Reconciler) finalize(ctx context.Context, v *v1alpha1.Validator) error {
	if !controllerutil.ContainsFinalizer(v, ReleaseFinalizer) {
		return nil
	}
	ns, err := r.namespace(ctx, v, ReleaseNamespace(v))
	if re := (*RenderError)(nil); err != nil && !errors.As(err, &re) {
		return err
	}
	if ns != nil && ns.DeletionTimestamp == nil {
		// Claims hold data and outlive their Validator, as the built-in
		// layout's do: their namespace stays for a Validator made again.
		var claims corev1.PersistentVolumeClaimList
		if err := r.fresh.List(ctx, &claims, client.InNamespace(ns.Name), client.Limit(1)); err != nil {
			return fmt.Errorf("claims of namespace %s: %w", ns.Name, err)
		}
		if len(claims.Items) > 0 {
			if err := r.prune(ctx, v, &Layout{Namespace: ns.Name}); err != nil {
				return err
			}
			log.FromContext(ctx).Info("kept release namespace: it holds claims", "namespace", ns.Name)
		} else {
			uid := ns.UID
			if err := r.client.Delete(ctx, ns, client.Preconditions{UID: &uid}, client.DisableReadYourWritesConsistency); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete namespace %s: %w", ns.Name, err)
			}
			log.FromContext(ctx).Info("deleted release namespace", "namespace", ns.Name)
		}
	}
	return r.patchFinalizer(ctx, v, controllerutil.RemoveFinalizer)
}

// patchFinalizer adds or removes (edit) ReleaseFinalizer, with an
// optimistic lock.
func (r *Reconciler) patchFinalizer(ctx context.Context, v *v1alpha1.Validator, edit func(client.Object, string) bool) error {
	orig := v.DeepCopy()
	if !edit(v, ReleaseFinalizer) {
		return nil
	}
	if err := r.client.Patch(ctx, v, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("finalizer of validator %s: %w", v.Name, client.IgnoreNotFound(err))
	}
	return nil
}

// renderFailed shows re as PENDING with Rendered and Ready False (release
// 1.11's watch events carry Ready's reason); logged when the cause is new.
func (r *Reconciler) renderFailed(ctx context.Context, v *v1alpha1.Validator, re *RenderError) error {
	if c := meta.FindStatusCondition(v.Status.Conditions, v1alpha1.ConditionRendered); c == nil ||
		c.Status != metav1.ConditionFalse || c.Reason != re.Reason || c.Message != re.Message {
		log.FromContext(ctx).Info("render failed; the running workloads stay", "reason", re.Reason, "message", re.Message)
	}
	return r.writeStatus(ctx, v, func(v *v1alpha1.Validator) v1alpha1.ValidatorStatus {
		st := *v.Status.DeepCopy()
		st.ObservedGeneration, st.Phase = v.Generation, v1alpha1.PhasePending
		setCondition(&st, v, v1alpha1.ConditionRendered, metav1.ConditionFalse, re.Reason, re.Message)
		setCondition(&st, v, v1alpha1.ConditionReady, metav1.ConditionFalse, re.Reason, re.Message)
		return st
	})
}

// setCondition sets v's condition typ in st, at v's generation.
func setCondition(st *v1alpha1.ValidatorStatus, v *v1alpha1.Validator, typ string,
	status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: v.Generation,
	})
}

// ValidatorLabels name v on what is written for it: outside the
// Validators' namespace the cache holds only objects that carry them.
func ValidatorLabels(v *v1alpha1.Validator) map[string]string {
	return map[string]string{ManagedByLabel: ManagedBy, ValidatorLabel: v.Name, ValidatorNamespaceLabel: v.Namespace}
}

// stamp labels obj with v, and a pod template with ValidatorLabel (and
// ValidatorNamespaceLabel only outside v's namespace: a new label on the
// built-in layout's templates would restart every pod).
func stamp(v *v1alpha1.Validator, l *Layout, obj client.Object) {
	obj.SetLabels(labels.Merge(obj.GetLabels(), ValidatorLabels(v)))
	pod := map[string]string{ValidatorLabel: v.Name}
	if l.Namespace != v.Namespace {
		pod[ValidatorNamespaceLabel] = v.Namespace
	}
	if t := PodTemplate(obj); t != nil {
		t.Labels = labels.Merge(t.Labels, pod)
	}
}

// writeStatus writes the status computes, unless the cached Validator has
// it (a cache behind gets the new status and reconciles again). It is
// compared with and patched on the API server's Validator: a status equal to
// a stale one would not be written, and a patch from a stale one would leave
// out fields that seem unchanged.
func (r *Reconciler) writeStatus(ctx context.Context, cached *v1alpha1.Validator, status func(*v1alpha1.Validator) v1alpha1.ValidatorStatus) error {
	if equality.Semantic.DeepEqual(status(cached), cached.Status) {
		return nil
	}
	var v v1alpha1.Validator
	if err := r.fresh.Get(ctx, client.ObjectKeyFromObject(cached), &v); err != nil {
		return client.IgnoreNotFound(err)
	}
	if v.Generation != cached.Generation || v.UID != cached.UID {
		return nil // a newer spec: its event reconciles again
	}
	st := status(&v)
	if equality.Semantic.DeepEqual(st, v.Status) {
		return nil
	}
	orig := v.DeepCopy()
	v.Status = st
	if err := r.client.Status().Patch(ctx, &v, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("status of validator %s: %w", v.Name, client.IgnoreNotFound(err))
	}
	log.FromContext(ctx).V(1).Info("status", "phase", st.Phase, "databaseReady", st.DatabaseReady)
	return nil
}

// apply writes obj by server-side apply, forcing ownership (drift is
// corrected, not a conflict), unless the cached object is upToDate.
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
	digest, err := requestDigest(obj)
	if err != nil {
		return err
	}
	if cur != nil && upToDate(cur, digest) {
		return nil
	}
	config, err := applyConfig(obj, digest)
	if err != nil {
		return err
	}
	if err := r.client.Apply(ctx, config, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}

// get is the cached object of obj's kind and key, nil when none (of a
// Service or ConfigMap, its metadata only).
func (r *Reconciler) get(ctx context.Context, obj client.Object) (client.Object, error) {
	// An empty object, not a copy of obj: copies cost CPU at scale.
	var cur client.Object
	switch t := reflect.TypeOf(obj).Elem(); obj.(type) {
	case *corev1.Service, *corev1.ConfigMap:
		cur = metadata(t.Name())
	default:
		cur = reflect.New(t).Interface().(client.Object)
	}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(obj), cur)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", obj.GetName(), err)
	}
	return cur, nil
}

// createClaim creates claim unless it exists: a bound claim is immutable,
// and an existing one (kept, or resized by hand) is the one to use.
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

// keepClaimTemplates keeps cur's claim templates in st: Kubernetes forbids
// changing them (a new size goes through growDataClaim).
func keepClaimTemplates(st, cur *appsv1.StatefulSet) {
	st.Spec.VolumeClaimTemplates = make([]corev1.PersistentVolumeClaim, len(cur.Spec.VolumeClaimTemplates))
	for i := range cur.Spec.VolumeClaimTemplates {
		cur.Spec.VolumeClaimTemplates[i].DeepCopyInto(&st.Spec.VolumeClaimTemplates[i])
		// Apply sends what the server would default anyway.
		st.Spec.VolumeClaimTemplates[i].Status = corev1.PersistentVolumeClaimStatus{}
	}
}

// growDataClaim raises the internal database's claim to spec.databaseStorage
// when larger (never shrinks; a class without expansion is refused, retried).
func (r *Reconciler) growDataClaim(ctx context.Context, v *v1alpha1.Validator, namespace string) error {
	if v.Spec.ExternalDatabase || v.Spec.DatabaseStorage == "" {
		return nil
	}
	want, err := resource.ParseQuantity(v.Spec.DatabaseStorage)
	if err != nil {
		return nil // the API validated it; a bad one must not block the rest
	}
	cur := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: DataClaimName(v.Name)}, cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	if have := cur.Spec.Resources.Requests[corev1.ResourceStorage]; have.Cmp(want) >= 0 {
		return nil
	}
	// The request alone: the claim's other fields are not ours.
	patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{%q:%q}}}}`, corev1.ResourceStorage, want.String())
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: cur.Namespace, Name: cur.Name}}
	if err := r.client.Patch(ctx, pvc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("grow claim %s to %s: %w", cur.Name, v.Spec.DatabaseStorage, err)
	}
	return nil
}

// KeepAnnotation: keep tells Helm, and the controller, never to prune.
const KeepAnnotation = "helm.sh/resource-policy"

// pruned are the applied kinds, deleted when a render no longer holds them
// (Services and ConfigMaps as metadata). Claims hold data: never pruned.
var pruned = []struct {
	kind string
	list func() client.ObjectList
}{
	{"Deployment", func() client.ObjectList { return &appsv1.DeploymentList{} }},
	{"StatefulSet", func() client.ObjectList { return &appsv1.StatefulSetList{} }},
	{"Service", func() client.ObjectList { return metadataList("Service") }},
	{"ConfigMap", func() client.ObjectList { return metadataList("ConfigMap") }},
}

// prune deletes what was applied for v in l's namespace that l does not
// hold, but those KeepAnnotation keeps.
func (r *Reconciler) prune(ctx context.Context, v *v1alpha1.Validator, l *Layout) error {
	want := map[string]bool{}
	for _, obj := range l.Objects {
		want[kindName(reflect.TypeOf(obj).Elem().Name(), obj.GetName())] = true
	}
	for _, kind := range pruned {
		objs, err := r.applied(ctx, v, l.Namespace, kind.list())
		if err != nil {
			return err
		}
		for _, obj := range objs {
			name := kindName(kind.kind, obj.GetName())
			if want[name] || obj.GetAnnotations()[KeepAnnotation] == "keep" {
				continue
			}
			uid := obj.GetUID()
			if err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("prune %s: %w", name, err)
			}
			log.FromContext(ctx).V(1).Info("pruned", "object", name, "namespace", l.Namespace)
		}
	}
	return nil
}

// kindName is "<kind>/<name>".
func kindName(kind, name string) string { return kind + "/" + name }

// applied are the objects of list's kind in namespace that are ours.
func (r *Reconciler) applied(ctx context.Context, v *v1alpha1.Validator, namespace string, list client.ObjectList) ([]client.Object, error) {
	if err := r.client.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{validatorField: v.Name}, client.MatchingLabels{ManagedByLabel: ManagedBy}); err != nil {
		return nil, fmt.Errorf("list %T: %w", list, err)
	}
	var out []client.Object
	err := meta.EachListItem(list, func(o runtime.Object) error {
		if obj := o.(client.Object); ours(obj, v) {
			out = append(out, obj)
		}
		return nil
	})
	return out, err
}

// ours tells whether obj was applied for v: labelled with it and, in v's
// namespace, controlled by it (not left by a former Validator of the name).
func ours(obj client.Object, v *v1alpha1.Validator) bool {
	key, ok := validatorOf(obj)
	if !ok || key != client.ObjectKeyFromObject(v) {
		return false
	}
	return obj.GetNamespace() != v.Namespace || metav1.IsControlledBy(obj, v)
}

// observe reads l's workloads and v's pods from the cache.
func (r *Reconciler) observe(ctx context.Context, v *v1alpha1.Validator, l *Layout) (o Observed, err error) {
	o.Names = map[string]string{}
	deployments := map[string]**appsv1.Deployment{Participant: &o.Participant, ValidatorApp: &o.ValidatorApp, WalletUI: &o.WalletUI, ANSUI: &o.ANSUI}
	for _, obj := range l.Objects {
		component := obj.GetLabels()[ComponentLabel]
		switch w := obj.(type) {
		case *appsv1.Deployment:
			if into, ok := deployments[component]; ok {
				o.Names[component] = w.Name
				*into, err = owned(ctx, r, v, w)
			}
		case *appsv1.StatefulSet:
			if component == Postgres {
				o.Names[component] = w.Name
				o.Postgres, err = owned(ctx, r, v, w)
			}
		}
		if err != nil {
			return o, err
		}
	}
	var pods corev1.PodList
	match := client.MatchingLabels{}
	if l.Namespace != v.Namespace {
		match[ValidatorNamespaceLabel] = v.Namespace
	}
	if err := r.client.List(ctx, &pods, client.InNamespace(l.Namespace), client.MatchingFields{validatorField: v.Name}, match); err != nil {
		return o, fmt.Errorf("list pods: %w", err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range pods.Items {
		o.Pods = append(o.Pods, &pods.Items[i])
	}
	o.Missing, err = r.missing(ctx, l.Namespace, l.Objects)
	return o, err
}

// owned is the cached object of want's kind and key if it is ours.
func owned[T client.Object](ctx context.Context, r *Reconciler, v *v1alpha1.Validator, want T) (T, error) {
	var none T
	cur, err := r.get(ctx, want)
	if err != nil || cur == nil || !ours(cur, v) {
		return none, err
	}
	return cur.(T), nil
}

// missing lists, per component, what a pod template reads (not optionally)
// that is not there (podrefs.Lacking). A ConfigMap's keys are not checked:
// the cache holds its metadata only.
func (r *Reconciler) missing(ctx context.Context, namespace string, objs []client.Object) (map[string][]podrefs.Ref, error) {
	held := map[podrefs.Object][]string{}
	read := map[podrefs.Object]bool{}
	out := map[string][]podrefs.Ref{}
	for _, obj := range objs {
		t := PodTemplate(obj)
		if t == nil {
			continue
		}
		refs := podrefs.All(&t.Spec)
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
				obj = metadata("ConfigMap")
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
			out[obj.GetLabels()[ComponentLabel]] = l
		}
	}
	return out, nil
}

// metadataList and metadata read a core kind the cache holds as metadata.
func metadataList(kind string) client.ObjectList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind + "List"))
	return l
}

func metadata(kind string) client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}
