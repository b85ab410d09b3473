// Package intent is the controller that keeps the identity provider and the
// cluster in step with the database, the record of what operators asked
// for: handlers record, and this controller converges level-triggered and
// idempotently, so a process killed at any line heals when the next starts.
// A recorded create is finished, never undone; a managed Validator resource
// without a row is removed. Only the leader runs it, learning of every
// replica's writes from the database's change feed (feed.go); its decisions
// are pure functions (decide.go).
package intent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/validator-manager/validator-manager/impl/controller/backoff"
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
	// ApplyValidator applies the resource; a new one references the
	// Secrets writes says are written next.
	ApplyValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule, writes domain.WrittenSecrets) error
	// PutSecrets writes given over the Secrets, and defaults only where a
	// Secret or key is missing; then references the Secrets in the resource.
	PutSecrets(ctx context.Context, validator string, given domain.ValidatorSecrets, defaults domain.SecretDefaults) error
	// CachedSecrets tells which of the validator's Secrets exist with their key.
	CachedSecrets(validator string) domain.WrittenSecrets
	// PasswordKey is the cluster's key generated passwords derive from.
	PasswordKey(ctx context.Context) ([]byte, error)
	ApplyBackupSchedule(ctx context.Context, validator string, b *domain.BackupSchedule) error
	// InStep tells from caches alone whether the cluster runs what in says.
	InStep(in domain.ValidatorIntent) bool
	DeleteValidator(ctx context.Context, name string) error
	// CachedState reads a managed validator's state from the cache; false
	// when the cache has no such resource.
	CachedState(name string) (domain.ValidatorState, bool)
	// CachedCondition is a copy of the cached resource's condition; nil when none.
	CachedCondition(validator, typ string) *metav1.Condition
	// ApplyCondition writes that condition alone, under its own field owner.
	ApplyCondition(ctx context.Context, validator string, c metav1.Condition) error
	// ManagedValidators names every managed Validator resource (cache).
	ManagedValidators() ([]string, error)
	// Manages tells whether a resource with these labels is managed here.
	Manages(labels map[string]string) bool
	// ValidatorSource is the source of the Validators' changes, through preds.
	ValidatorSource(preds ...predicate.Predicate) source.Source
	// WatchRecords calls f, until ctx ends, with the validator of each
	// change of its Secrets or backup CronJob, once the cache shows it.
	WatchRecords(ctx context.Context, f func(validator string))
	// WaitForSync waits until the cached reads answer (false when ctx ends).
	WaitForSync(ctx context.Context) bool
}

// Identity is the identity provider of validators without custom auth.
type Identity interface {
	// CreateWalletUser creates <validator>_walletuser, or adopts the one
	// that carries claim; domain.ErrConflict when one does not carry it.
	CreateWalletUser(ctx context.Context, validator, claim, password string) (domain.CreatedUser, error)
	// ProvisionClients makes the validator's clients, or adopts those that
	// carry claim; idempotent.
	ProvisionClients(ctx context.Context, validator, claim string) (domain.ProvisionedAuth, error)
	// ClientSecret reads the ledger API client's secret (the client must carry claim).
	ClientSecret(ctx context.Context, validator, claim string) (string, error)
	// Endpoints are the realm's URLs the validators' apps use.
	Endpoints() domain.AuthEndpoints
	// UIURLs are the addresses of validator's UIs that ProvisionClients
	// gives their clients.
	UIURLs(validator string) (wallet, nameService string)
	// UserExists tells whether the user of id exists (drift.go).
	UserExists(ctx context.Context, id string) (bool, error)
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
	// Changes is how often the change feed is taken; default 200 ms.
	Changes time.Duration
	// Charts: chart mode (chartsecrets.go); the Manager's cache must hold
	// the release namespaces' Secrets.
	Charts bool
	// ObserveEvery paces the looks at the identity provider (drift.go).
	ObserveEvery time.Duration
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

	// charts: chart mode; kube reads the cache, reader the API server
	// (the values the chart Secrets copy).
	charts bool
	kube   client.Client
	reader client.Reader

	// names feeds the channel source; running is set while the feed runs.
	names   chan event.TypedGenericEvent[string]
	running atomic.Bool

	// initial holds the names found at start not reconciled yet; once
	// empty, markSynced closes inStep.
	mu         sync.Mutex
	initial    map[string]bool
	inStep     chan struct{}
	markSynced func()

	drift *drift
	// began is when the feed began the first pass (Unix nanoseconds).
	began atomic.Int64
}

// New builds the controller; SetupWithManager runs it.
func New(o Options) *Controller {
	c := &Controller{store: o.Store, cluster: o.Cluster, identity: o.Identity, log: cmp.Or(o.Logger, slog.New(slog.DiscardHandler)),
		namespace: o.Namespace, workers: o.Workers, changes: o.Changes, charts: o.Charts,
		names: make(chan event.TypedGenericEvent[string], namesBuffer), inStep: make(chan struct{}), drift: newDrift(o.ObserveEvery)}
	if c.workers <= 0 {
		c.workers = 4
	}
	if c.changes <= 0 {
		c.changes = 200 * time.Millisecond
	}
	c.markSynced = sync.OnceFunc(func() {
		close(c.inStep)
		c.log.Info("validators reconciled with their records")
	})
	return c
}

// namesBuffer is how many names wait for the controller's channel source.
const namesBuffer = 1024

// SetupWithManager runs the controller, and its feed, under mgr, on the
// leader only.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr)
	if c.charts {
		c.kube, c.reader = mgr.GetClient(), mgr.GetAPIReader()
		b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(c.chartSecretRequests))
	}
	err := b.
		Named("validator-intent").
		WatchesRawSource(c.cluster.ValidatorSource(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return c.cluster.Manages(o.GetLabels())
		}), readChanged)).
		WatchesRawSource(records{c}).
		WatchesRawSource(source.Channel(c.names, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, name string) []reconcile.Request { return []reconcile.Request{c.request(name)} }))).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: c.workers,
			RateLimiter:             backoff.RateLimiter[reconcile.Request](time.Second),
		}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return c.Reconcile(ctx, req.Name)
		}))
	if err != nil {
		return err
	}
	// A Runnable without NeedLeaderElection runs on the leader only.
	return mgr.Add(manager.RunnableFunc(c.feed))
}

// readChanged passes a Validator's update when something this controller
// reads of it changed (among them the workloads' namespace, which the backup
// CronJob dials, and the finalizers, which chart Secrets wait for), or
// nothing did (a resync): not the workload controller's status writes that
// only move conditions, which would each read the database again for nothing.
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
			old.Status.Namespace != cur.Status.Namespace ||
			!sameCondition(meta.FindStatusCondition(old.Status.Conditions, v1alpha1.ConditionProvisioned),
				meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProvisioned)) ||
			!maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) ||
			!slices.Equal(old.Finalizers, cur.Finalizers) || !old.DeletionTimestamp.Equal(cur.DeletionTimestamp)
	},
}

// records is the source of the changes of the validators' Secrets and
// backup CronJobs; synced when the gateway's cached reads answer, so that
// no worker writes what the cache would have shown in step.
type records struct{ c *Controller }

func (r records) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.c.cluster.WatchRecords(ctx, func(name string) { q.Add(r.c.request(name)) })
	return nil
}

func (r records) WaitForSync(ctx context.Context) error {
	if !r.c.cluster.WaitForSync(ctx) {
		return fmt.Errorf("the cluster gateway did not sync: %w", ctx.Err())
	}
	return nil
}

func (records) String() string { return "validators' Secrets and backup CronJobs" }

func (c *Controller) request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.namespace, Name: name}}
}

// Running tells whether the controller runs in this process.
func (c *Controller) Running() bool { return c.running.Load() }

// Enqueue asks for name to be reconciled at once. It never waits: when the
// controller does not run here or the buffer is full, the feed has it.
func (c *Controller) Enqueue(name string) {
	if !c.Running() {
		return
	}
	select {
	case c.names <- event.TypedGenericEvent[string]{Object: name}:
	default:
	}
}

// InStep is closed once every validator known at start was reconciled.
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

// Ping is DOWN until InStep: before, creates a crash interrupted may not
// show in the cluster yet.
func (c *Controller) Ping(context.Context) error {
	select {
	case <-c.inStep:
		return nil
	default:
	}
	return domain.NotReady(c.began.Load(), "the first reconcile of validators with their records has not finished", "it began")
}

// Reconcile drives one validator to its record.
func (c *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	defer c.reconciled(name)
	err := c.reconcile(ctx, name)
	if err != nil && ctx.Err() == nil {
		c.log.Warn("validator does not match its record yet; retrying", "validator", name, "error", err)
	}
	return reconcile.Result{}, err
}

// reconcile carries out the decisions (decide.go) in order: identity, the
// resource and backup schedule, Secrets, condition, state copied back. A
// failure of the identity provider does not stop the rest: the resource is
// applied with what was provisioned and shows the failure.
func (c *Controller) reconcile(ctx context.Context, name string) error {
	in, err := c.store.ValidatorIntent(ctx, name)
	if errors.Is(err, domain.ErrNotFound) {
		return c.cluster.DeleteValidator(ctx, name)
	}
	if err != nil {
		return err
	}
	key, err := c.cluster.PasswordKey(ctx)
	if err != nil {
		return fmt.Errorf("the cluster's password key: %w", err)
	}
	identity := decideIdentity(in.Validator, key, c.identity)
	failure := c.observeIdentity(ctx, in.Validator, key, &identity)
	if failure == nil {
		failure = c.provisionIdentity(ctx, &in.Validator, identity)
	}
	if failure != nil && !errors.As(failure, new(*provisionFailure)) {
		return failure
	}
	if in.Validator, err = desiredResource(in.Validator, c.identity.Endpoints()); err != nil {
		return err
	}
	work, err := decideSecrets(in.Validator, key, c.cluster.CachedSecrets(name))
	if err != nil {
		return err
	}
	if !c.cluster.InStep(in) {
		if err := c.cluster.ApplyValidator(ctx, in.Validator, in.Prune, work.secrets()); err != nil {
			return err
		}
		faultpoint.Reach("validator.applied")
		if err := c.cluster.ApplyBackupSchedule(ctx, name, in.Backup); err != nil {
			return err
		}
	}
	if err := c.writeSecrets(ctx, in.Validator, work); err != nil {
		if failure != nil || !errors.As(err, new(*provisionFailure)) {
			return err
		}
		failure = err
	}
	if err := c.writeChartSecrets(ctx, name); err != nil {
		return err
	}
	shown := c.cluster.CachedCondition(name, v1alpha1.ConditionProvisioned)
	if cond := decideProvisioned(failure, work, shown); cond != nil && !sameCondition(cond, shown) {
		if err := c.cluster.ApplyCondition(ctx, name, *cond); err != nil {
			return err
		}
	}
	st, cached := c.cluster.CachedState(name)
	if st, ok := stateToCopy(in.Validator, st, cached); ok {
		if err := c.store.SyncValidatorState(ctx, name, st); err != nil {
			return err
		}
	}
	return failure
}

// sameCondition tells whether a and b say the same (lastTransitionTime and
// observedGeneration aside).
func sameCondition(a, b *metav1.Condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

// provisionIdentity makes what w says in the identity provider and records
// the outcome in the row (ProvisionError), a failure being retried.
func (c *Controller) provisionIdentity(ctx context.Context, v *domain.Validator, w identityWork) error {
	if !w.Provider {
		return nil
	}
	var err error
	if w.WalletUser {
		err = c.provisionWalletUser(ctx, v, w.Password)
	}
	if err == nil && w.Clients {
		err = c.provisionClients(ctx, v)
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

func (c *Controller) provisionWalletUser(ctx context.Context, v *domain.Validator, password string) error {
	u, err := c.identity.CreateWalletUser(ctx, v.Name, v.IdentityClaim(), password)
	if errors.Is(err, domain.ErrConflict) {
		return &provisionFailure{Reason: ReasonWalletUserConflict,
			err: domain.Conflict("the identity provider already has a user %s_walletuser that this validator did not create; remove it, and the validator is provisioned", strings.ToLower(v.Name))}
	}
	if err != nil {
		return &provisionFailure{Reason: ReasonIdentityProviderUnavailable, err: fmt.Errorf("create the wallet user: %w", err)}
	}
	faultpoint.Reach("create.walletUser")
	if err := c.store.SetWalletUser(ctx, v.Name, u.ID); err != nil {
		return err
	}
	v.WalletUserID = u.ID
	return nil
}

// provisionClients makes the clients and records their ids in the row, so
// that later reconciles need not ask; a crash between is healed by adoption.
func (c *Controller) provisionClients(ctx context.Context, v *domain.Validator) error {
	a, err := c.identity.ProvisionClients(ctx, v.Name, v.IdentityClaim())
	if errors.Is(err, domain.ErrConflict) {
		return &provisionFailure{Reason: ReasonClientConflict,
			err: domain.Invalid("name", "the identity provider already has a client of validator %s that it did not make for it: %v", v.Name, err)}
	}
	if err != nil {
		return &provisionFailure{Reason: ReasonIdentityProviderUnavailable, err: fmt.Errorf("create the identity provider's clients: %w", err)}
	}
	faultpoint.Reach("auth.provisioned")
	if v.ProvisionedAuth != nil && *v.ProvisionedAuth == a {
		return nil // looked at again (drift.go): nothing changed
	}
	if old := v.ProvisionedAuth; old != nil && old.LedgerAPIUser != "" && old.LedgerAPIUser != a.LedgerAPIUser {
		// Made anew (drift.go): the Secret first, so that a crash before
		// the row records the client leaves it to heal again.
		if err := c.healClientSecret(ctx, *v); err != nil {
			return err
		}
	}
	if err := c.store.SetProvisionedAuth(ctx, v.Name, a); err != nil {
		return err
	}
	v.ProvisionedAuth = &a
	return nil
}

// writeSecrets writes what w says in one call, then clears the values from
// the row if it still holds them (an edit meanwhile keeps its own).
func (c *Controller) writeSecrets(ctx context.Context, v domain.Validator, w secretWork) error {
	if w.Unsealable {
		c.log.Warn("secret values recorded for a validator do not open under the cluster's password key and are dropped; give them again with an edit",
			"validator", v.Name)
	}
	if w.OperatorPassword {
		c.log.Warn("the database Secret of a validator is missing and its password was the operator's: restore the Secret, or give a new password with an edit",
			"validator", v.Name, "secret", domain.DatabaseSecretName(v.Name))
	}
	if w.ClientSecret {
		secret, err := c.identity.ClientSecret(ctx, v.Name, v.IdentityClaim())
		if err != nil {
			return &provisionFailure{Reason: ReasonIdentityProviderUnavailable, err: fmt.Errorf("read the ledger API client's secret: %w", err)}
		}
		w.Defaults.LedgerAPIClientSecret = &secret
	}
	if w.writes() {
		if err := c.cluster.PutSecrets(ctx, v.Name, w.Given, w.Defaults); err != nil {
			return err
		}
	}
	if !w.Clear {
		return nil
	}
	faultpoint.Reach("secrets.written")
	return c.store.ClearPendingSecrets(ctx, v.Name, v.PendingSecrets)
}
