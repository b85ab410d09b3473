// Package runs records the backup and pruning runs of managed validators:
// it observes the Jobs their CronJobs create (start, end, outcome, message)
// and keeps one run per Job in the database, keyed by the Job's UID.
package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/backoff"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// PruneCronJobName is the CronJob whose Jobs are pruning runs of validator
// (Canton's automatic pruning makes no Job).
func PruneCronJobName(validator string) string { return validator + "-prune" }

// Store records runs (impl/store implements it).
type Store interface {
	// ObserveRun inserts or updates the run of r.JobUID; a finished run is
	// final. domain.ErrNotFound when the validator is unknown.
	ObserveRun(ctx context.Context, r *domain.Run) error
}

// Reconciler records the run of each Job of a managed validator's backup
// or prune CronJob.
type Reconciler struct {
	client client.Client
	store  Store
}

// New is a Reconciler that records runs in s; it reads Jobs through the
// manager's client (from its cache).
func New(s Store) *Reconciler { return &Reconciler{store: s} }

// SetupWithManager registers the controller, of the managed validators'
// Jobs, with mgr; it runs on the leader only.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.client = mgr.GetClient()
	managed := predicate.NewPredicateFuncs(func(o client.Object) bool {
		l := o.GetLabels()
		return l[cluster.ManagedByLabel] == cluster.ManagedBy && l[cluster.ValidatorLabel] != ""
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("runs").
		For(&batchv1.Job{}, builder.WithPredicates(managed)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, RateLimiter: backoff.RateLimiter[reconcile.Request](5 * time.Millisecond)}).
		Complete(r)
}

// Reconcile records what the Job says of its run. A Job that is gone keeps
// its run as last recorded.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job batchv1.Job
	if err := r.client.Get(ctx, req.NamespacedName, &job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	run, ok := Observe(&job)
	if !ok {
		return ctrl.Result{}, nil
	}
	err := r.store.ObserveRun(ctx, &run)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		// Not a validator of this installation's database (another
		// installation's, or one being removed).
		log.FromContext(ctx).V(1).Info("job of an unknown validator", "validator", run.Validator)
		return ctrl.Result{}, nil
	case err != nil:
		if ctx.Err() != nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("record %s run of validator %q: %w", run.Kind, run.Validator, err)
	}
	return ctrl.Result{}, nil
}

// Observe is the run a Job of a validator's backup or prune CronJob stands
// for; ok is false for a Job that is no such run or has not started.
func Observe(job *batchv1.Job) (run domain.Run, ok bool) {
	validator := job.Labels[cluster.ValidatorLabel]
	owner := metav1.GetControllerOf(job)
	if validator == "" || owner == nil || owner.Kind != "CronJob" || !strings.HasPrefix(owner.APIVersion, batchv1.GroupName+"/") {
		return domain.Run{}, false
	}
	switch owner.Name {
	case cluster.BackupCronJobName(validator):
		run.Kind = domain.RunBackup
	case PruneCronJobName(validator):
		run.Kind = domain.RunPrune
	default:
		return domain.Run{}, false
	}
	if job.Status.StartTime == nil {
		return domain.Run{}, false
	}
	run.Validator, run.JobUID, run.StartedAt = validator, string(job.UID), job.Status.StartTime.UTC()
	if failed := condition(job, batchv1.JobFailed); failed != nil {
		at := failed.LastTransitionTime.UTC()
		if at.IsZero() {
			at = run.StartedAt
		}
		run.FinishedAt, run.Succeeded = &at, ptr.To(false)
		run.Message = failureMessage(failed)
		return run, true
	}
	if job.Status.CompletionTime != nil {
		at := job.Status.CompletionTime.UTC()
		run.FinishedAt, run.Succeeded = &at, ptr.To(true)
	}
	return run, true
}

func condition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

func failureMessage(c *batchv1.JobCondition) string {
	switch {
	case c.Reason != "" && c.Message != "":
		return c.Reason + ": " + c.Message
	case c.Reason != "":
		return c.Reason
	}
	return c.Message
}
