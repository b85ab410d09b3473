// Package management implements release 1.11 of the API (base path /api):
// validators, their pruning and backup schedules, remote participants.
package management

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
)

var _ managementapi.StrictServerInterface = (*Server)(nil)

// Options is what release 1.11 is built from.
type Options struct {
	Store    Store
	Cluster  Cluster
	Identity Identity
	// Namespace is where the validators run (api.namespace); it appears in
	// the service addresses of responses.
	Namespace string
	Logger    *slog.Logger
	// Now is the clock (tests inject one); time.Now when nil.
	Now func() time.Time
	// Resync is how often the reconciler walks every validator;
	// DefaultResync when zero.
	Resync time.Duration
}

// Server serves release 1.11.
type Server struct {
	store     Store
	cluster   Cluster
	identity  Identity
	namespace string
	log       *slog.Logger
	now       func() time.Time
	// locks serialises the writes to one validator: a handler's and the
	// reconciler's.
	locks *keyedMutex
	rec   *Reconciler
	// states is what the phase sync last read or wrote (SyncStatesOnce).
	states recordedStates
}

// New returns the release 1.11 handlers.
func New(o Options) *Server {
	s := &Server{store: o.Store, cluster: o.Cluster, identity: o.Identity, namespace: o.Namespace, log: o.Logger, now: o.Now, locks: &keyedMutex{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.rec = newReconciler(o, s.locks, s.log)
	return s
}

// Reconciler is the loop that keeps the identity provider and the cluster
// in step with the database; run it beside the server.
func (s *Server) Reconciler() *Reconciler { return s.rec }

// keyedMutex serialises changes to one validator within this process: a
// handler's write and its reconcile, and the reconciler's, never interleave.
// Holding a validator's lock also means that no create of it is in flight,
// which is how the reconciler tells an interrupted create from a running one.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// change writes a validator's record, then drives the cluster to it. When
// the cluster refuses, the record is put back as it was and the cluster
// driven back to that (or, if it still refuses, by the reconciler's
// retries): a failed request leaves nothing changed. The caller holds the
// validator's lock.
//
// op names the change for the fault point "<op>.written", between the record
// and the cluster, where a crash test kills the process.
func (s *Server) change(ctx context.Context, name, op string, write, restore func(context.Context) error) error {
	if err := write(ctx); err != nil {
		return err
	}
	faultpoint.Reach(op + ".written")
	err := s.rec.reconcileLocked(ctx, name)
	if err == nil {
		return nil
	}
	// The request's context may be what failed.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if rerr := restore(bg); rerr != nil {
		// The record keeps the change: the reconciler will apply it.
		s.log.ErrorContext(ctx, "change failed and its record could not be restored; the reconciler will apply it", "validator", name, "error", err, "restore", rerr)
		s.rec.retry(name, err)
		return err
	}
	if rerr := s.rec.reconcileLocked(bg, name); rerr != nil {
		s.rec.retry(name, rerr)
	}
	return err
}

func isNotFound(err error) bool { return errors.Is(err, domain.ErrNotFound) }
