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
}

// Server serves release 1.11.
type Server struct {
	store     Store
	cluster   Cluster
	identity  Identity
	namespace string
	log       *slog.Logger
	now       func() time.Time
	locks     keyedMutex
}

// New returns the release 1.11 handlers.
func New(o Options) *Server {
	s := &Server{store: o.Store, cluster: o.Cluster, identity: o.Identity, namespace: o.Namespace, log: o.Logger, now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// keyedMutex serialises changes to one validator (edit, schedules) within
// this process, so that a change and its compensation are not interleaved
// with another change of the same validator. Creation needs no lock: the
// database's unique name decides.
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

// undo is a compensation stack: steps done so far are undone in reverse
// order when a later step fails. Undo failures are logged, never hidden
// behind the original error.
type undo struct {
	log   *slog.Logger
	steps []func(context.Context) error
	names []string
}

func (u *undo) push(name string, f func(context.Context) error) {
	u.names = append(u.names, name)
	u.steps = append(u.steps, f)
}

// run undoes every step, newest first. It uses a context of its own: the
// request's may be what failed.
func (u *undo) run(cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := len(u.steps) - 1; i >= 0; i-- {
		if err := u.steps[i](ctx); err != nil {
			u.log.Error("compensation failed: state may be left behind", "step", u.names[i], "error", err, "cause", cause)
		}
	}
}

func isNotFound(err error) bool { return errors.Is(err, domain.ErrNotFound) }
