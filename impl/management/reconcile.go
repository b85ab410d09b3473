package management

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
)

// Reconciler drives the identity provider and the cluster to what the
// database records, as a Kubernetes controller does: level-triggered (it
// compares what is with what should be, whatever happened before) and
// idempotent (applying what is already there writes nothing). It runs on
// start, after every write (the handlers call it), every resync period, and
// again with backoff for a validator whose reconcile failed. A process
// killed at any line therefore heals when the next one starts.
//
// The database row is the record of what the operator asked for:
//   - a row still Creating, found while no create holds its lock, belongs to
//     a create that died: it is undone (cluster objects, the wallet user that
//     carries the row's claim, then the row);
//   - any other row is applied: Validator resource, pruning schedule, backup
//     CronJob (created, updated, suspended or removed);
//   - a managed Validator resource without a row is removed.
//
// Secret values are never in the database, so they are not reconciled: a
// create writes them before it finishes, an edit before it changes the row.
type Reconciler struct {
	store    Store
	cluster  Cluster
	identity Identity
	log      *slog.Logger
	locks    *keyedMutex
	resync   time.Duration
	queue    workqueue.TypedRateLimitingInterface[string]
	// synced is set once the first full pass has walked every validator.
	synced atomic.Bool
}

// DefaultResync is how often every validator is reconciled when nothing
// asked for it.
const DefaultResync = 5 * time.Minute

// intentPage is how many validator names a full pass reads at once.
const intentPage = 500

func newReconciler(o Options, locks *keyedMutex, log *slog.Logger) *Reconciler {
	resync := o.Resync
	if resync <= 0 {
		resync = DefaultResync
	}
	return &Reconciler{
		store:    o.Store,
		cluster:  o.Cluster,
		identity: o.Identity,
		log:      log,
		locks:    locks,
		resync:   resync,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "validators"}),
	}
}

// Reconcile drives one validator to its record.
func (r *Reconciler) Reconcile(ctx context.Context, name string) error {
	defer r.locks.lock(name)()
	return r.reconcileLocked(ctx, name)
}

// resyncOne is the periodic reconcile of one validator: nothing is written,
// and the API server not asked, when the cluster's caches show it in step.
func (r *Reconciler) resyncOne(ctx context.Context, name string) error {
	defer r.locks.lock(name)()
	in, err := r.store.ValidatorIntent(ctx, name)
	if err == nil && !in.Validator.Creating && r.cluster.InStep(in) {
		return nil
	}
	return r.reconcileLocked(ctx, name)
}

// reconcileLocked is Reconcile for a caller that holds the validator's lock.
func (r *Reconciler) reconcileLocked(ctx context.Context, name string) error {
	in, err := r.store.ValidatorIntent(ctx, name)
	if isNotFound(err) {
		// No record: whatever the cluster has of it was undone.
		return r.cluster.DeleteValidator(ctx, name)
	}
	if err != nil {
		return err
	}
	if in.Validator.Creating {
		return r.undoCreate(ctx, in.Validator)
	}
	return r.apply(ctx, in)
}

// apply makes the cluster what the record says.
func (r *Reconciler) apply(ctx context.Context, in domain.ValidatorIntent) error {
	if err := r.cluster.ApplyValidator(ctx, in.Validator, in.Prune); err != nil {
		return err
	}
	return r.cluster.ApplyBackupSchedule(ctx, in.Validator.Name, in.Backup)
}

// undoCreate removes what a create made, the record last: a crash half way
// leaves the record, and the next reconcile finishes the undo.
func (r *Reconciler) undoCreate(ctx context.Context, v domain.Validator) error {
	if err := r.cluster.DeleteValidator(ctx, v.Name); err != nil {
		return fmt.Errorf("undo create of %q: %w", v.Name, err)
	}
	faultpoint.Reach("undo.cluster")
	if !v.CustomAuth {
		if err := r.identity.DeleteWalletUser(ctx, v.Name, v.Claim); err != nil {
			return fmt.Errorf("undo create of %q: %w", v.Name, err)
		}
	}
	faultpoint.Reach("undo.identity")
	if err := r.store.DeleteValidator(ctx, v.Name); err != nil && !isNotFound(err) {
		return fmt.Errorf("undo create of %q: %w", v.Name, err)
	}
	r.log.Info("interrupted validator create undone", "validator", v.Name)
	return nil
}

// retry reconciles name again later, with backoff.
func (r *Reconciler) retry(name string, cause error) {
	r.log.Warn("validator does not match its record yet; retrying", "validator", name, "error", cause)
	r.queue.AddRateLimited(name)
}

// ReconcileAll walks every validator of the database, then every managed
// Validator resource of the cluster that has no record. A validator that
// fails is retried with backoff; the error says how many failed.
func (r *Reconciler) ReconcileAll(ctx context.Context) error {
	seen := map[string]bool{}
	failed := 0
	var first error
	for after := ""; ; {
		page, err := r.store.ValidatorNames(ctx, after, intentPage)
		if err != nil {
			return err
		}
		for _, name := range page {
			seen[name] = true
			// Read under the lock, so that no write of the name interleaves.
			if err := r.resyncOne(ctx, name); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				failed++
				first = cmp.Or(first, err)
				r.retry(name, err)
			}
		}
		if len(page) < intentPage {
			break
		}
		after = page[len(page)-1]
	}
	states, err := r.cluster.ValidatorStates(ctx)
	if err != nil {
		return err
	}
	for name := range states {
		if seen[name] {
			continue
		}
		if err := r.Reconcile(ctx, name); err != nil {
			failed++
			first = cmp.Or(first, err)
			r.retry(name, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d validators do not match their record yet (retrying), the first: %w", failed, first)
	}
	return nil
}

// Run reconciles everything now and every resync period, and works off the
// retries, until ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			name, shutdown := r.queue.Get()
			if shutdown {
				return
			}
			if err := r.Reconcile(ctx, name); err != nil && ctx.Err() == nil {
				r.retry(name, err)
			} else {
				r.queue.Forget(name)
			}
			r.queue.Done(name)
		}
	})
	defer func() {
		r.queue.ShutDown()
		wg.Wait()
	}()
	tick := time.NewTicker(r.resync)
	defer tick.Stop()
	for {
		if err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reconciling validators", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// RunOnce is one full pass; after the first, Ping reports UP.
func (r *Reconciler) RunOnce(ctx context.Context) error {
	start := time.Now()
	err := r.ReconcileAll(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !r.synced.Swap(true) {
		r.log.Info("validators reconciled with their records", "duration", time.Since(start).String())
	}
	return err
}

// Ping is DOWN until the first full pass is done: before it, records of
// creates that a crash interrupted may still show in the cluster.
func (r *Reconciler) Ping(context.Context) error {
	if !r.synced.Load() {
		return domain.Unavailable("the first reconcile of validators with their records has not finished")
	}
	return nil
}
