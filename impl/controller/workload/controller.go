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

// FieldOwner is the field manager of everything the controller applies:
// the process's one.
const FieldOwner = cluster.FieldOwner

// Options configure the controller.
type Options struct {
	// MaxConcurrentReconciles is the number of workers (validators
	// reconciled at once; one validator is never reconciled by two at
	// once). 0 means 1.
	MaxConcurrentReconciles int
	// Renderer lays out each Validator's objects; nil is the built-in
	// layout (BuiltIn). The chart renderer puts them in a namespace of the
	// validator's own (ReleaseNamespace): the Manager's cache must then see
	// the labelled objects of other namespaces (cluster.ReleaseCache).
	Renderer Renderer
	// RenderBackoff is the first wait before a failed render
	// (*RenderError) is tried again; it doubles with every failure of the
	// same validator up to MaxRenderBackoff. 0 (or less) means 1s and 5m.
	RenderBackoff, MaxRenderBackoff time.Duration
}

// Reconciler keeps each Validator's workloads as its Renderer says and
// writes its status from them.
type Reconciler struct {
	// client reads from the Manager's cache, each read after the cache
	// has seen the controller's own writes before it (read-your-writes),
	// so that a reconcile never applies again what the last one applied.
	client client.Client
	// fresh reads the Validator from the API server before its status is
	// written, and the release namespaces (which the cache does not hold).
	fresh client.Reader
	// options, with their defaults.
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

// refsField is the index of the Validators by the Secrets and ConfigMaps
// their pod templates read (under kindName).
const refsField = "workload.validator-manager.io/pod-refs"

// validatorField indexes the kinds the controller lists per validator (the
// pruned kinds, and Pods) by their ValidatorLabel: without it each list
// scans every object of its kind in the namespace, which at 1,000
// validators was half of the controller's CPU.
const validatorField = "workload.validator-manager.io/validator"

// SetupWithManager registers the controller with mgr: it reconciles a
// Validator when it changes (its generation or its status), when one of the
// objects it applied changes or is deleted, so that hand edits and
// deletions are corrected, and when one of its Pods or a Secret or
// ConfigMap its pod templates read changes, so that its status says why a
// pod cannot start. Objects map to their Validator by their labels
// (ValidatorLabel, ValidatorNamespaceLabel): in chart mode they live in
// another namespace than the Validator, which an owner reference cannot
// name. The scheme of mgr must hold v1alpha1 (v1alpha1.AddToScheme) and
// the apps and core groups.
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
			// A chart's Secrets are labelled with their validator (labelled).
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
		// A new status too: one the cache was behind on (writeStatus);
		// and the cache's resync (resynced).
		For(&v1alpha1.Validator{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, statusChanged, resynced))).
		Watches(&appsv1.Deployment{}, byLabel).
		Watches(&appsv1.StatefulSet{}, byLabel).
		Watches(&corev1.Service{}, byLabel, builder.OnlyMetadata).
		Watches(&corev1.PersistentVolumeClaim{}, byLabel).
		// The database password's rotation (rotation.go).
		Watches(&batchv1.Job{}, byLabel).
		// A Pod queues the Validator it belongs to when it comes or goes,
		// or when why it cannot start changes.
		Watches(&corev1.Pod{}, byLabel, builder.WithPredicates(podChanged)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.readers(podrefs.Secret))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.readers(podrefs.ConfigMap)), builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.options.MaxConcurrentReconciles, 1),
			RateLimiter: backoff.RateLimiter[reconcile.Request](5 * time.Millisecond)}).
		Complete(r)
}

// resynced passes the cache's periodic resync of a Validator (an update
// whose old and new object are the same version), so that a validator
// whose event was missed (a reconcile that failed into a long backoff, a
// Pod's event dropped) is reconciled again within cluster.Resync; the
// generation and status predicates drop it.
var resynced = predicate.Not[client.Object](predicate.ResourceVersionChangedPredicate{})

// statusChanged passes a Validator whose status changed.
var statusChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*v1alpha1.Validator)
		cur, ok2 := e.ObjectNew.(*v1alpha1.Validator)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(old.Status, cur.Status)
	},
}

// labelled is the Validator an object belongs to: the one its
// ValidatorLabel names, in the namespace its ValidatorNamespaceLabel
// names, else in its own (the built-in layout's objects, and those applied
// before the label was).
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

// readers maps a Secret or ConfigMap to the Validators whose pods read it:
// in a release namespace the one it is labelled with, else those whose
// built-in layout reads it.
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

// ReleaseFinalizer is on a Validator whose workloads live in a namespace
// of their own (chart mode): the controller deletes that namespace when the
// Validator is deleted, then removes the finalizer.
const ReleaseFinalizer = "validator-manager.io/release-namespace"

// Reasons of the Rendered condition besides a RenderError's.
const (
	ReasonRendered = "Rendered"
	// ReasonNamespaceMoved: the validator's workloads live in another
	// namespace than the one the renderer puts them in (chart mode was
	// switched on or off); the controller does not move them.
	ReasonNamespaceMoved = "NamespaceMoved"
	// ReasonNamespaceConflict: the release namespace exists and is not
	// this validator's.
	ReasonNamespaceConflict = "NamespaceConflict"
)

// Reconcile renders the validator's objects, applies them, deletes those
// it applied before that the render no longer holds, and writes its
// status. Nothing is applied unless the whole render succeeded: a failed
// render leaves what runs in place.
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

// prepare readies l's namespace: in chart mode, the finalizer that
// deletes it, and the namespace itself. A validator whose workloads live
// in another namespace than l's (chart mode switched on or off) is not
// moved while they are there: running it twice, or without its database,
// is worse than not running the new layout (docs/decisions.md).
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

// holds tells whether namespace holds v's workloads: its own namespace
// Deployments or StatefulSets it applied, a release namespace its being
// there.
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

// namespace is the namespace of name if it is v's (labelled with it), nil
// when there is none; another's is a RenderError.
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

// ensureNamespace makes v's release namespace unless it is there, by
// server-side apply, labelled with v.
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
	// Namespaces are read from the API server (namespace), never from the
	// cache: a write that waited for the cache would start an informer of
	// every namespace.
	if err := r.client.Apply(ctx, apply, client.FieldOwner(FieldOwner), client.ForceOwnership, client.DisableReadYourWritesConsistency); err != nil {
		return fmt.Errorf("apply namespace %s: %w", name, err)
	}
	return nil
}

// finalize deletes the release namespace of v, being deleted (or, while
// it holds claims, the workloads in it), and then removes its finalizer.
func (r *Reconciler) finalize(ctx context.Context, v *v1alpha1.Validator) error {
	if !controllerutil.ContainsFinalizer(v, ReleaseFinalizer) {
		return nil
	}
	ns, err := r.namespace(ctx, v, ReleaseNamespace(v))
	if re := (*RenderError)(nil); err != nil && !errors.As(err, &re) {
		return err
	}
	if ns != nil && ns.DeletionTimestamp == nil {
		// Claims hold data (the database's, the migration dump's): a
		// deletion never destroys them, as the built-in layout's outlive
		// their Validator. Their namespace stays, with its Secrets, and a
		// Validator made again (from its record) finds them; without
		// claims the namespace goes.
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

// patchFinalizer adds or removes (edit) ReleaseFinalizer on v, by a merge
// patch of its finalizers that fails should they have changed meanwhile.
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

// renderFailed shows why v could not be rendered: PENDING, and the
// Rendered and Ready conditions False with the error's reason and message
// (Ready: the workloads are not at the current generation; release 1.11's
// watch events carry its reason); logged when that cause is new.
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

// ValidatorLabels name v on the objects applied for it, and on what the
// leader writes into its release namespace: the cache holds, outside the
// Validators' namespace, only objects that carry them.
func ValidatorLabels(v *v1alpha1.Validator) map[string]string {
	return map[string]string{ManagedByLabel: ManagedBy, ValidatorLabel: v.Name, ValidatorNamespaceLabel: v.Namespace}
}

// stamp labels obj, one of l's objects, with v (validatorLabels), and
// the pod template of a workload with ValidatorLabel, and in another
// namespace than v's with ValidatorNamespaceLabel too (the built-in
// layout's pod templates keep the labels they had: a new one would restart
// every pod).
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

// writeStatus writes v's status as status computes it from the Validator,
// unless it says so already.
// A status the cache holds is not written again (a restart reads and writes
// nothing): should the cache be behind the API server, the status it then
// receives reconciles the Validator again (SetupWithManager). A status to
// write is compared with and patched on the Validator as the API server has
// it: a status equal to a stale one would not be written, or a merge patch
// from it would leave out fields that seem unchanged (a phase, with new
// conditions).
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

// get is the cached object of obj's kind and key, nil when there is none
// (of a Service or ConfigMap, its metadata: the cache holds no more).
func (r *Reconciler) get(ctx context.Context, obj client.Object) (client.Object, error) {
	// An empty object of obj's type (a copy of obj, which Get overwrites,
	// was a twentieth of the server's CPU at rest at 1,000 validators).
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
	// A merge patch of the request alone: the claim's other fields are
	// not the controller's.
	patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{%q:%q}}}}`, corev1.ResourceStorage, want.String())
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: cur.Namespace, Name: cur.Name}}
	if err := r.client.Patch(ctx, pvc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("grow claim %s to %s: %w", cur.Name, v.Spec.DatabaseStorage, err)
	}
	return nil
}

// KeepAnnotation on an object tells Helm to leave it when it uninstalls or
// upgrades a release; the controller likewise never prunes it.
const KeepAnnotation = "helm.sh/resource-policy"

// pruned are the kinds the controller applies by server-side apply, and
// deletes when a render no longer holds them (Services and ConfigMaps,
// which only charts render, read as metadata, as the cache holds them).
// Claims are created once and never deleted: they hold data.
var pruned = []struct {
	kind string
	list func() client.ObjectList
}{
	{"Deployment", func() client.ObjectList { return &appsv1.DeploymentList{} }},
	{"StatefulSet", func() client.ObjectList { return &appsv1.StatefulSetList{} }},
	{"Service", func() client.ObjectList { return metadataList("Service") }},
	{"ConfigMap", func() client.ObjectList { return metadataList("ConfigMap") }},
}

// prune deletes the objects of the pruned kinds in l's namespace that the
// controller applied for v and l does not hold, but those annotated
// KeepAnnotation: keep.
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

// applied are the objects of list's kind in namespace that the controller
// applied for v (ours).
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
// namespace (the built-in layout), controlled by it (an object another
// Validator of the same name left is not). A release namespace's objects
// have no owner: an owner reference cannot cross namespaces.
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

// owned is the cached object of want's kind and key: nil unless it exists
// and is ours.
func owned[T client.Object](ctx context.Context, r *Reconciler, v *v1alpha1.Validator, want T) (T, error) {
	var none T
	cur, err := r.get(ctx, want)
	if err != nil || cur == nil || !ours(cur, v) {
		return none, err
	}
	return cur.(T), nil
}

// missing lists, per component, what the pod template of a workload among
// objs reads (not optionally) that is not there (podrefs.Lacking): the
// Secrets and ConfigMaps that do not exist and the keys an existing Secret
// lacks. A ConfigMap's keys are not checked: the cache holds its metadata
// only.
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

// metadataList is what a list of a core kind the cache holds as metadata
// is read into.
func metadataList(kind string) client.ObjectList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind + "List"))
	return l
}

// metadata is what an object of a core kind the cache holds as metadata
// (Services and ConfigMaps: nothing reads more of them) is read into.
func metadata(kind string) client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}
