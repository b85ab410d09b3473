// Package intent is the controller that keeps the identity provider and the
// cluster in step with the database, which is the record of what operators
// asked for. Handlers validate, record and enqueue; this controller does the
// rest, level-triggered and idempotent, one worker per validator at a time
// (the work queue's guarantee), so a process killed at any line converges
// when the next one starts:
//   - a row still Creating is finished when the create that inserted it is
//     waiting in this process (Expect/Wait), and undone otherwise;
//   - any other row is applied: Validator resource with its pruning
//     schedule, backup CronJob; the phase the cluster reports is copied back
//     into the row, so that list filters and pages, which run in the
//     database, see it;
//   - a managed Validator resource without a row is removed.
package intent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
)

// Store is the database as this controller reads and writes it.
type Store interface {
	// ValidatorIntent reads a validator (creating or not) with its schedules.
	ValidatorIntent(ctx context.Context, name string) (domain.ValidatorIntent, error)
	// ValidatorNames reads up to limit names (creating or not) after after.
	ValidatorNames(ctx context.Context, after string, limit int) ([]string, error)
	// SetWalletUser records the identity provider's id of the wallet user.
	SetWalletUser(ctx context.Context, name, id string) error
	// SetProvisionedAuth records the clients the identity provider made.
	SetProvisionedAuth(ctx context.Context, name string, a domain.ProvisionedAuth) error
	FinishCreate(ctx context.Context, name string) error
	DeleteValidator(ctx context.Context, name string) error
	// SyncValidatorState records what the cluster reports.
	SyncValidatorState(ctx context.Context, name string, s domain.ValidatorState) error
}

// Cluster is the cluster gateway as this controller uses it.
type Cluster interface {
	ApplyValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) error
	WriteSecrets(ctx context.Context, validator string, secrets domain.ValidatorSecrets) error
	// DefaultSecrets writes values only where a Secret or its key is
	// missing (read fresh), never over a value.
	DefaultSecrets(ctx context.Context, validator string, d domain.SecretDefaults) error
	// CachedSecrets tells from the cache which of the validator's Secrets
	// exist with their key.
	CachedSecrets(validator string) domain.WrittenSecrets
	// PasswordKey is the key generated database passwords derive from,
	// made once per cluster and kept there.
	PasswordKey(ctx context.Context) ([]byte, error)
	ApplyBackupSchedule(ctx context.Context, validator string, b *domain.BackupSchedule) error
	// InStep tells from caches alone whether the cluster runs what in says.
	InStep(in domain.ValidatorIntent) bool
	DeleteValidator(ctx context.Context, name string) error
	// CachedState reads a managed validator's state from the cache; false
	// when the cache has no such resource.
	CachedState(name string) (domain.ValidatorState, bool)
	// ManagedValidators names every managed Validator resource (cache).
	ManagedValidators() ([]string, error)
	// Manages tells whether a Validator resource with these labels is one
	// this installation manages.
	Manages(labels map[string]string) bool
	// SecretValidator names the managed validator a Secret belongs to, ""
	// for any other Secret.
	SecretValidator(s metav1.Object) string
	// WaitForSync waits until the gateway's cached reads answer (false when
	// ctx ends first): the controller's workers and its first pass wait
	// for it.
	WaitForSync(ctx context.Context) bool
}

// Identity is the identity provider of wallet users and of the clients of
// validators without custom authentication.
type Identity interface {
	CreateWalletUser(ctx context.Context, validator, claim string) (domain.CreatedUser, error)
	DeleteWalletUser(ctx context.Context, validator, claim string) error
	// ProvisionClients makes the validator's clients, or adopts those that
	// carry claim; idempotent.
	ProvisionClients(ctx context.Context, validator, claim string) (domain.ProvisionedAuth, error)
	// ClientSecret reads the ledger API client's secret (the client must carry claim).
	ClientSecret(ctx context.Context, validator, claim string) (string, error)
	// DeleteClients removes the validator's clients that carry claim.
	DeleteClients(ctx context.Context, validator, claim string) error
	// Endpoints are the realm's URLs the validators' apps use.
	Endpoints() domain.AuthEndpoints
}

// Options build a Controller.
type Options struct {
	Store    Store
	Cluster  Cluster
	Identity Identity
	Logger   *slog.Logger
	// Workers reconcile different validators at once; default 4.
	Workers int
	// Namespace is where the validators' resources are.
	Namespace string
	// Changes names validators whose records changed (a database feed);
	// nil: none. Enqueue is the handlers' way in.
	Changes <-chan event.TypedGenericEvent[string]
	// Forward carries Enqueue to the process that runs the controller when
	// this one does not (a replica that is not the leader); nil: such
	// enqueues wait for the next start or resync.
	Forward func(name string)
	// CreateGrace is how long a row still Creating whose create is not in
	// flight in this process is left alone, because another replica may be
	// provisioning it; after that it is undone. 0: undone at once (one
	// process).
	CreateGrace time.Duration
}

// Controller is the intent controller; SetupWithManager runs it under a
// Manager (the leader's).
type Controller struct {
	store     Store
	cluster   Cluster
	identity  Identity
	log       *slog.Logger
	namespace string
	workers   int
	forward   func(name string)
	grace     time.Duration
	changes   <-chan event.TypedGenericEvent[string]
	creates   creates

	// enqueued carries Enqueue to the controller's channel source; started
	// is the context of the running controller (nil: not running here).
	enqueued  chan event.TypedGenericEvent[string]
	startedMu sync.Mutex
	started   context.Context

	// key is the cluster's key of generated passwords (PasswordKey), once read.
	keyMu sync.Mutex
	key   []byte

	// initial holds the names found at start that have not been reconciled
	// yet; the controller is in step (Ping) once it is empty.
	mu      sync.Mutex
	initial map[string]bool
	synced  atomic.Bool

	// local is the context of StartCreates, under which a process that
	// does not run the controller provisions the creates it serves.
	localMu sync.Mutex
	local   context.Context
	localWG sync.WaitGroup
}

// namesPage is how many names one read of the database returns.
const namesPage = 500

// New builds the controller; SetupWithManager runs it.
func New(o Options) (*Controller, error) {
	c := &Controller{store: o.Store, cluster: o.Cluster, identity: o.Identity, log: o.Logger, namespace: o.Namespace,
		workers: o.Workers, forward: o.Forward, grace: o.CreateGrace, changes: o.Changes,
		enqueued: make(chan event.TypedGenericEvent[string], enqueueBuffer)}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.workers <= 0 {
		c.workers = 4
	}
	return c, nil
}

// enqueueBuffer is how many Enqueues wait for the controller's source.
const enqueueBuffer = 1024

func ptr[T any](v T) *T { return &v }

// SetupWithManager runs the controller under mgr, whose cache holds the
// Validators, CronJobs and Secrets the gateway reads: it reconciles a
// validator when its managed Validator resource or its backup CronJob
// changes (and at every resync of the cache), when one of its Secrets
// changes or goes (deleted or emptied by hand), when a handler or the
// database feed names it, and, once at start, every validator of the
// database and the cluster. It runs on the elected leader only.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	byName := handler.TypedFuncs[string, reconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[string], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(c.request(e.Object))
		},
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("validator-intent").
		For(&v1alpha1.Validator{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return c.cluster.Manages(o.GetLabels())
		}))).
		Owns(&batchv1.CronJob{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name := c.cluster.SecretValidator(o); name != "" {
				return []reconcile.Request{c.request(name)}
			}
			return nil
		})).
		WatchesRawSource(source.Channel(c.enqueued, byName)).
		WatchesRawSource(gatewaySynced(c.cluster.WaitForSync))
	if c.changes != nil {
		b = b.WatchesRawSource(source.Channel(c.changes, byName))
	}
	err := b.WithOptions(controller.Options{
		MaxConcurrentReconciles: c.workers,
		// Several Managers in one test process build this controller.
		SkipNameValidation: ptr(true),
		RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute),
	}).Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return c.Reconcile(ctx, req.Name)
	}))
	if err != nil {
		return err
	}
	// The first pass: the leader's, with the controller.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !c.cluster.WaitForSync(ctx) {
			return nil
		}
		return c.start(ctx)
	}))
}

// gatewaySynced is a source of no events whose sync is the gateway's: the
// controller starts its workers once the gateway's cached reads (InStep,
// CachedState) answer, so that no reconcile writes what the cache would
// have shown in step.
type gatewaySynced func(ctx context.Context) bool

func (gatewaySynced) Start(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	return nil
}

func (w gatewaySynced) WaitForSync(ctx context.Context) error {
	if !w(ctx) {
		return fmt.Errorf("the cluster gateway did not sync: %w", ctx.Err())
	}
	return nil
}

func (c *Controller) request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.namespace, Name: name}}
}

// start enqueues every validator known at start (database rows, among them
// those without any resource, and managed resources) and marks the
// controller running here until ctx ends.
func (c *Controller) start(ctx context.Context) error {
	names, err := c.allNames(ctx)
	if err != nil {
		return fmt.Errorf("intent controller: %w", err)
	}
	c.mu.Lock()
	c.initial = make(map[string]bool, len(names))
	for _, n := range names {
		c.initial[n] = true
	}
	c.mu.Unlock()
	if len(names) == 0 {
		c.markSynced()
	}
	c.startedMu.Lock()
	c.started = ctx
	c.startedMu.Unlock()
	defer func() {
		c.startedMu.Lock()
		c.started = nil
		c.startedMu.Unlock()
	}()
	for _, n := range names {
		c.send(ctx, n)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) send(ctx context.Context, name string) {
	select {
	case c.enqueued <- event.TypedGenericEvent[string]{Object: name}:
	case <-ctx.Done():
	}
}

// Running tells whether the controller runs in this process.
func (c *Controller) Running() bool {
	c.startedMu.Lock()
	defer c.startedMu.Unlock()
	return c.started != nil
}

// StartCreates lets this process provision the creates it serves while the
// controller runs elsewhere (it runs on every replica, the controller only on
// the leader): a create's secret values and the wallet user's temporary
// password exist only in the memory of the process that took the request.
// It returns once ctx ends and the provisioning in flight has finished.
func (c *Controller) StartCreates(ctx context.Context) error {
	c.localMu.Lock()
	c.local = ctx
	c.localMu.Unlock()
	<-ctx.Done()
	c.localMu.Lock()
	c.local = nil
	c.localMu.Unlock()
	c.localWG.Wait()
	return nil
}

// Enqueue asks for name to be reconciled (a handler recorded a change); in
// a process that does not run the controller, Forward carries it to the one
// that does.
func (c *Controller) Enqueue(name string) {
	c.startedMu.Lock()
	ctx := c.started
	c.startedMu.Unlock()
	if ctx != nil {
		c.send(ctx, name)
		return
	}
	if c.forward != nil {
		c.forward(name)
	}
}

// allNames names every validator of the database and every managed
// Validator resource.
func (c *Controller) allNames(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var names []string
	for after := ""; ; {
		page, err := c.store.ValidatorNames(ctx, after, namesPage)
		if err != nil {
			return nil, err
		}
		for _, n := range page {
			seen[n] = true
			names = append(names, n)
		}
		if len(page) < namesPage {
			break
		}
		after = page[len(page)-1]
	}
	managed, err := c.cluster.ManagedValidators()
	if err != nil {
		return nil, err
	}
	for _, n := range managed {
		if !seen[n] {
			names = append(names, n)
		}
	}
	return names, nil
}

func (c *Controller) markSynced() {
	if !c.synced.Swap(true) {
		c.log.Info("validators reconciled with their records")
	}
}

// reconciled notes that name had its first reconcile since start.
func (c *Controller) reconciled(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initial == nil || !c.initial[name] {
		return
	}
	delete(c.initial, name)
	if len(c.initial) == 0 {
		c.markSynced()
	}
}

// Ping is DOWN until the cache has synced and every validator known at
// start was reconciled once: before that, records of creates that a crash
// interrupted may still show in the cluster.
func (c *Controller) Ping(context.Context) error {
	if !c.synced.Load() {
		return domain.Unavailable("the first reconcile of validators with their records has not finished")
	}
	return nil
}

// Reconcile drives one validator to its record.
func (c *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	defer c.reconciled(name)
	var res reconcile.Result
	err := c.reconcile(ctx, name, &res)
	if err != nil && ctx.Err() == nil {
		c.log.Warn("validator does not match its record yet; retrying", "validator", name, "error", err)
	}
	return res, err
}

func (c *Controller) reconcile(ctx context.Context, name string, res *reconcile.Result) error {
	in, err := c.store.ValidatorIntent(ctx, name)
	if errors.Is(err, domain.ErrNotFound) {
		// No record: whatever the cluster has of it goes.
		return c.cluster.DeleteValidator(ctx, name)
	}
	if err != nil {
		return err
	}
	if in.Validator.Creating {
		if cr := c.creates.get(in.Validator.Claim); cr != nil {
			if !cr.take() {
				return nil // provisioned in this process by StartCreates' side
			}
			return c.finishCreate(ctx, in, cr)
		}
		if left := c.grace - time.Since(in.Validator.CreatedAt); c.grace > 0 && left > 0 {
			// Another replica may be provisioning it: look again once its
			// create must have ended.
			res.RequeueAfter = left
			return nil
		}
		return c.undoCreate(ctx, in.Validator)
	}
	if err := c.provisionAuth(ctx, &in.Validator); err != nil {
		return err
	}
	applied, err := withAuth(in.Validator, c.identity.Endpoints())
	if err != nil {
		return err
	}
	in.Validator = applied
	if !c.cluster.InStep(in) {
		if err := c.cluster.ApplyValidator(ctx, in.Validator, in.Prune); err != nil {
			return err
		}
		if err := c.cluster.ApplyBackupSchedule(ctx, name, in.Backup); err != nil {
			return err
		}
	}
	if err := c.ensureSecrets(ctx, in.Validator); err != nil {
		return err
	}
	return c.syncState(ctx, in.Validator)
}

// syncState copies the phase and the edit flag the cluster reports into the
// row when they differ.
func (c *Controller) syncState(ctx context.Context, v domain.Validator) error {
	st, ok := c.cluster.CachedState(v.Name)
	if !ok || (st.Phase == v.Phase && st.DisableUserEdit == v.Immutable) {
		return nil
	}
	return c.store.SyncValidatorState(ctx, v.Name, st)
}

// finishCreate provisions a create whose handler is waiting: wallet user,
// Validator resource, Secrets, then the row's Creating flag is cleared. A
// failure answers the handler and undoes the create.
func (c *Controller) finishCreate(ctx context.Context, in domain.ValidatorIntent, cr *Create) error {
	v := in.Validator
	user, err := c.provision(ctx, in, cr)
	if err == nil && !cr.commit() {
		err = errors.New("the create was given up")
	}
	if err == nil {
		if err = c.store.FinishCreate(ctx, v.Name); err == nil {
			faultpoint.Reach("create.finished")
			cr.finish(user, nil)
			return c.syncState(ctx, v)
		}
	}
	// Undone before the handler answers, so that a failed create leaves
	// nothing behind when its answer arrives (an undo that fails is
	// retried: the row stays Creating, hidden, until it succeeds).
	c.creates.remove(cr.Claim)
	uerr := c.undoCreate(ctx, v)
	cr.finish(nil, err)
	return uerr
}

func (c *Controller) provision(ctx context.Context, in domain.ValidatorIntent, cr *Create) (*domain.CreatedUser, error) {
	v := in.Validator
	var user *domain.CreatedUser
	if !v.CustomAuth {
		u, err := c.identity.CreateWalletUser(ctx, v.Name, v.Claim)
		if errors.Is(err, domain.ErrConflict) {
			// A user made elsewhere: the caller can pick another name.
			return nil, domain.Invalid("name", "the identity provider already has a user %s_walletuser; remove it or choose another name", v.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("create wallet user: %w", err)
		}
		faultpoint.Reach("create.walletUser")
		user = &u
		if err := c.store.SetWalletUser(ctx, v.Name, u.ID); err != nil {
			return nil, err
		}
		v.WalletUserID = u.ID
		if err := c.provisionAuth(ctx, &v); err != nil {
			return nil, err
		}
		faultpoint.Reach("create.clients")
	}
	v, err := withAuth(v, c.identity.Endpoints())
	if err != nil {
		return nil, err
	}
	if err := c.cluster.ApplyValidator(ctx, v, in.Prune); err != nil {
		return nil, err
	}
	faultpoint.Reach("create.applied")
	if err := c.cluster.WriteSecrets(ctx, v.Name, requestSecrets(v, cr.Secrets)); err != nil {
		return nil, err
	}
	faultpoint.Reach("create.secrets")
	if err := c.ensureSecrets(ctx, v); err != nil {
		return nil, err
	}
	return user, nil
}

// undoCreate removes what a create made, the record last: a crash half way
// leaves the record, and the next reconcile finishes the undo.
func (c *Controller) undoCreate(ctx context.Context, v domain.Validator) error {
	if err := c.cluster.DeleteValidator(ctx, v.Name); err != nil {
		return fmt.Errorf("undo create of %q: %w", v.Name, err)
	}
	faultpoint.Reach("undo.cluster")
	if !v.CustomAuth {
		if err := c.identity.DeleteClients(ctx, v.Name, claimOf(v)); err != nil {
			return fmt.Errorf("undo create of %q: %w", v.Name, err)
		}
		if err := c.identity.DeleteWalletUser(ctx, v.Name, v.Claim); err != nil {
			return fmt.Errorf("undo create of %q: %w", v.Name, err)
		}
	}
	faultpoint.Reach("undo.identity")
	if err := c.store.DeleteValidator(ctx, v.Name); err != nil && !errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("undo create of %q: %w", v.Name, err)
	}
	c.log.Info("unfinished validator create undone", "validator", v.Name)
	return nil
}
