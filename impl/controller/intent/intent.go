// Package intent is the controller that keeps the identity provider and the
// cluster in step with the database, which is the record of what operators
// asked for. Handlers validate, record and enqueue; this controller does the
// rest, level-triggered and idempotent, one worker per validator at a time
// (the work queue's guarantee), so a process killed at any line converges
// when the next one starts:
//   - a row is provisioned and applied: without custom authentication the
//     wallet user (with the temporary password the create answered, derived
//     again from the cluster's key) and the identity provider's clients,
//     adopted when they carry the row's claim; the Validator resource with
//     its pruning schedule, the backup CronJob; the secret values a create or
//     an edit recorded (sealed) are written into the Secrets, then cleared
//     from the row if it still holds them; missing Secrets are defaulted.
//     The phase the cluster reports is copied back into the row, so that
//     list filters and pages, which run in the database, see it. A
//     provisioning failure is recorded in the row (ProvisionError) and
//     retried with backoff; a recorded create is finished, never undone;
//   - a managed Validator resource without a row is removed.
//
// Only the elected leader runs it: handlers on any replica only record, and
// the leader learns of their writes from the database's change feed
// (PollChanges) or, for its own process, from Enqueue.
package intent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
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
	"github.com/validator-manager/validator-manager/impl/keyring"
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
	// ClearPendingSecrets empties the row's pending secrets if they still
	// are sealed (compare-and-clear).
	ClearPendingSecrets(ctx context.Context, name, sealed string) error
	// SetProvisionError records why provisioning fails ("" once it works).
	SetProvisionError(ctx context.Context, name, message string) error
	// TakeChanges reads and removes up to limit names of the change feed.
	TakeChanges(ctx context.Context, limit int) ([]string, error)
	// SyncValidatorState records what the cluster reports.
	SyncValidatorState(ctx context.Context, name string, s domain.ValidatorState) error
}

// Cluster is the cluster gateway as this controller uses it.
type Cluster interface {
	ApplyValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) error
	// PutSecrets writes the values given over what the Secrets hold, and
	// the defaults only where a Secret or its key is missing, never over a
	// value; then references the Secrets in the resource, once.
	PutSecrets(ctx context.Context, validator string, given domain.ValidatorSecrets, defaults domain.SecretDefaults) error
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
	// ValidatorSource is the source of the changes of the Validator
	// resources the gateway reads, through preds.
	ValidatorSource(preds ...predicate.Predicate) source.Source
	// WatchRecords calls f, until ctx ends, with the name of the managed
	// validator each change of its Secrets or backup CronJob belongs to,
	// once the cached reads above show the change.
	WatchRecords(ctx context.Context, f func(validator string))
	// WaitForSync waits until the gateway's cached reads answer (false when
	// ctx ends first): the controller's workers and its first pass wait
	// for it.
	WaitForSync(ctx context.Context) bool
}

// Identity is the identity provider of wallet users and of the clients of
// validators without custom authentication.
type Identity interface {
	// CreateWalletUser creates <validator>_walletuser with password, or
	// adopts the one that carries claim; domain.ErrConflict when a user of
	// that name does not carry it.
	CreateWalletUser(ctx context.Context, validator, claim, password string) (domain.CreatedUser, error)
	// ProvisionClients makes the validator's clients, or adopts those that
	// carry claim; idempotent.
	ProvisionClients(ctx context.Context, validator, claim string) (domain.ProvisionedAuth, error)
	// ClientSecret reads the ledger API client's secret (the client must carry claim).
	ClientSecret(ctx context.Context, validator, claim string) (string, error)
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
	// Changes is how often PollChanges takes the database's change feed
	// (writes of every replica's handlers); default 200 ms.
	Changes time.Duration
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
	changes   time.Duration

	// enqueued carries Enqueue to the controller's channel source; started
	// is the context of the running controller (nil: not running here).
	enqueued  chan event.TypedGenericEvent[string]
	startedMu sync.Mutex
	started   context.Context

	// key is the cluster's key of generated passwords (PasswordKey), once read.
	keyMu sync.Mutex
	key   []byte

	// initial holds the names found at start that have not been reconciled
	// yet; the controller is in step (inStep closed, Ping nil) once it is
	// empty.
	mu      sync.Mutex
	initial map[string]bool
	inStep  chan struct{}
}

// namesPage is how many names one read of the database returns.
const namesPage = 500

// New builds the controller; SetupWithManager runs it.
func New(o Options) (*Controller, error) {
	c := &Controller{store: o.Store, cluster: o.Cluster, identity: o.Identity, log: o.Logger, namespace: o.Namespace,
		workers: o.Workers, changes: o.Changes,
		enqueued: make(chan event.TypedGenericEvent[string], enqueueBuffer), inStep: make(chan struct{})}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.workers <= 0 {
		c.workers = 4
	}
	if c.changes <= 0 {
		c.changes = 200 * time.Millisecond
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
		// A change of a managed Validator resource, once the gateway,
		// through which a reconcile reads it, shows it.
		WatchesRawSource(c.cluster.ValidatorSource(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return c.cluster.Manages(o.GetLabels())
		}), readChanged)).
		// A change of a validator's Secrets or backup CronJob, once the
		// gateway, through which a reconcile reads them, shows it.
		WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			c.cluster.WatchRecords(ctx, func(name string) { q.Add(c.request(name)) })
			return nil
		})).
		WatchesRawSource(source.Channel(c.enqueued, byName)).
		WatchesRawSource(gatewaySynced(c.cluster.WaitForSync))
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

// readChanged passes a Validator's update when something this controller
// reads of it changed (its spec, labels, annotations, phase, deletion) or
// nothing did (the cache's resync): not the workload controller's status
// writes that only move conditions, several per validator as its workloads
// come up, each of which would read the database again for nothing.
var readChanged = predicate.TypedFuncs[client.Object]{
	UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
		if e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
			return true
		}
		old, ok1 := e.ObjectOld.(*v1alpha1.Validator)
		cur, ok2 := e.ObjectNew.(*v1alpha1.Validator)
		if !ok1 || !ok2 {
			return true
		}
		return old.Generation != cur.Generation || old.Status.Phase != cur.Status.Phase ||
			!maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) ||
			!old.DeletionTimestamp.Equal(cur.DeletionTimestamp)
	},
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

// start makes the cluster's password key when there is none (handlers,
// which only read it, answer 503 until then; should that fail, the first
// reconcile that needs the key tries again), enqueues every validator known
// at start (database rows, among them those without any resource, and
// managed resources), marks the controller running here and takes the
// database's change feed until ctx ends.
func (c *Controller) start(ctx context.Context) error {
	if _, err := c.passwordKey(ctx); err != nil && ctx.Err() == nil {
		c.log.Warn("the cluster's password key could not be made yet; creates answer 503 until it is", "error", err)
	}
	names, err := c.allNames(ctx)
	if err != nil {
		return fmt.Errorf("intent controller: %w", err)
	}
	c.mu.Lock()
	c.initial = make(map[string]bool, len(names))
	for _, n := range names {
		c.initial[n] = true
	}
	if len(names) == 0 {
		c.markSynced()
	}
	c.mu.Unlock()
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
	c.PollChanges(ctx, func(name string) { c.send(ctx, name) })
	return nil
}

// send hands name to the controller's channel source, waiting for room.
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

// Enqueue asks for name to be reconciled at once (a handler of this
// process recorded a change). It never waits: in a process that does not
// run the controller, or when the source's buffer is full, it does
// nothing, and the leader takes the change from the database's feed
// (PollChanges) within Options.Changes.
func (c *Controller) Enqueue(name string) {
	if !c.Running() {
		return
	}
	select {
	case c.enqueued <- event.TypedGenericEvent[string]{Object: name}:
	default:
	}
}

// changesPage is how many changes one take reads.
const changesPage = 500

// PollChanges takes the database's change feed every Options.Changes and
// hands each name to add, until ctx ends: the writes of every replica's
// handlers reach the leader's queue within that interval. A take that
// fails is logged and tried again; what it would have taken stays in the
// feed.
func (c *Controller) PollChanges(ctx context.Context, add func(name string)) {
	tick := time.NewTicker(c.changes)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for {
			names, err := c.store.TakeChanges(ctx, changesPage)
			if err != nil {
				if ctx.Err() == nil {
					c.log.Warn("reading the validators' change feed", "error", err)
				}
				break
			}
			for _, n := range names {
				add(n)
			}
			if len(names) < changesPage {
				break
			}
		}
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

// markSynced closes inStep, once; c.mu is held.
func (c *Controller) markSynced() {
	select {
	case <-c.inStep:
	default:
		close(c.inStep)
		c.log.Info("validators reconciled with their records")
	}
}

// InStep is closed once every validator known at start was reconciled
// once (Ping answers nil from then on).
func (c *Controller) InStep() <-chan struct{} { return c.inStep }

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
	select {
	case <-c.inStep:
		return nil
	default:
		return domain.Unavailable("the first reconcile of validators with their records has not finished")
	}
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

func (c *Controller) reconcile(ctx context.Context, name string, _ *reconcile.Result) error {
	in, err := c.store.ValidatorIntent(ctx, name)
	if errors.Is(err, domain.ErrNotFound) {
		// No record: whatever the cluster has of it goes.
		return c.cluster.DeleteValidator(ctx, name)
	}
	if err != nil {
		return err
	}
	if err := c.provisionIdentity(ctx, &in.Validator); err != nil {
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
		faultpoint.Reach("validator.applied")
		if err := c.cluster.ApplyBackupSchedule(ctx, name, in.Backup); err != nil {
			return err
		}
	}
	if err := c.writeSecrets(ctx, in.Validator); err != nil {
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

// provisionIdentity makes, without custom authentication, the wallet user
// and the identity provider's clients the validator's row has not recorded
// yet, adopting those that carry its claim. A failure is recorded in the
// row, where the validator's status shows it, and returned (retried with
// backoff); success clears the record.
func (c *Controller) provisionIdentity(ctx context.Context, v *domain.Validator) error {
	if v.CustomAuth {
		return nil
	}
	err := c.provisionWalletUser(ctx, v)
	if err == nil {
		err = c.provisionAuth(ctx, v)
	}
	message := ""
	if err != nil {
		message = err.Error()
	}
	if message != v.ProvisionError {
		if serr := c.store.SetProvisionError(ctx, v.Name, message); serr != nil && err == nil {
			return serr
		}
		v.ProvisionError = message
	}
	return err
}

// provisionWalletUser creates the wallet user with the temporary password
// the create answered (derived again from the cluster's key, the name and
// the claim) and records its id.
func (c *Controller) provisionWalletUser(ctx context.Context, v *domain.Validator) error {
	if v.WalletUserID != "" {
		return nil
	}
	key, err := c.passwordKey(ctx)
	if err != nil {
		return fmt.Errorf("the cluster's password key: %w", err)
	}
	claim := v.IdentityClaim()
	u, err := c.identity.CreateWalletUser(ctx, v.Name, claim, keyring.TemporaryPassword(key, v.Name, claim))
	if errors.Is(err, domain.ErrConflict) {
		return domain.Conflict("the identity provider already has a user %s_walletuser that this validator did not create; remove it, and the validator is provisioned", strings.ToLower(v.Name))
	}
	if err != nil {
		return fmt.Errorf("create the wallet user: %w", err)
	}
	faultpoint.Reach("create.walletUser")
	if err := c.store.SetWalletUser(ctx, v.Name, u.ID); err != nil {
		return err
	}
	v.WalletUserID = u.ID
	return nil
}

// writeSecrets writes, in one call, the secret values a create or an edit
// recorded (sealed) into the validator's Secrets, replacing what they hold,
// and the defaults of the Secrets its pods reference that are missing
// (ensureSecrets: never one the values fill); then it clears the values
// from the row if it still holds them: an edit recorded meanwhile keeps
// its values for the next reconcile. Values that no longer open (the key
// was replaced) are dropped with a warning: the operator gives them again.
func (c *Controller) writeSecrets(ctx context.Context, v domain.Validator) error {
	given, err := c.pending(ctx, v)
	if err != nil {
		return err
	}
	defaults, err := c.defaults(ctx, v, given.Written())
	if err != nil {
		return err
	}
	if given != (domain.ValidatorSecrets{}) || defaults != (domain.SecretDefaults{}) {
		if err := c.cluster.PutSecrets(ctx, v.Name, given, defaults); err != nil {
			return err
		}
	}
	if v.PendingSecrets == "" {
		return nil
	}
	faultpoint.Reach("secrets.written")
	return c.store.ClearPendingSecrets(ctx, v.Name, v.PendingSecrets)
}

// pending are the secret values the row records for the cluster (none
// when it records none, or when they no longer open).
func (c *Controller) pending(ctx context.Context, v domain.Validator) (domain.ValidatorSecrets, error) {
	if v.PendingSecrets == "" {
		return domain.ValidatorSecrets{}, nil
	}
	key, err := c.passwordKey(ctx)
	if err != nil {
		return domain.ValidatorSecrets{}, fmt.Errorf("the cluster's password key: %w", err)
	}
	s, err := keyring.Open(key, v.Name, v.IdentityClaim(), v.PendingSecrets)
	if errors.Is(err, keyring.ErrUnsealable) {
		c.log.Warn("secret values recorded for a validator do not open under the cluster's password key and are dropped; give them again with an edit",
			"validator", v.Name)
		return domain.ValidatorSecrets{}, nil
	}
	if err != nil {
		return domain.ValidatorSecrets{}, err
	}
	return requestSecrets(v, s), nil
}
