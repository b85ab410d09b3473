package intent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Create is a create in flight: what a handler hands to the controller that
// exists nowhere durable (the request's secret values) and where it waits
// for the outcome. A row still Creating whose Create is not registered in
// this process belongs to a create that died (a crash, or a handler that gave
// up): the controller undoes it.
type Create struct {
	Name    string
	Claim   string
	Secrets domain.ValidatorSecrets

	mu        sync.Mutex
	taken     bool // one provisioner (the controller's worker or StartCreates') has it
	committed bool // the controller finishes the create: the handler answers its outcome
	abandoned bool // the handler has given up: the controller undoes the create
	done      chan struct{}
	user      *domain.CreatedUser
	err       error
}

// take claims the create for one provisioner; false when another has it.
func (c *Create) take() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken {
		return false
	}
	c.taken = true
	return true
}

// commit marks the create to be finished, unless the handler gave up.
func (c *Create) commit() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.abandoned {
		return false
	}
	c.committed = true
	return true
}

// abandon gives the create up, unless the controller already committed it.
func (c *Create) abandon() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.committed {
		return false
	}
	c.abandoned = true
	return true
}

// finish delivers the outcome to the waiting handler (once).
func (c *Create) finish(user *domain.CreatedUser, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return
	default:
	}
	c.user, c.err = user, err
	close(c.done)
}

// creates are the creates in flight in this process, by claim.
type creates struct {
	mu sync.Mutex
	m  map[string]*Create
}

func (p *creates) add(c *Create) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*Create{}
	}
	p.m[c.Claim] = c
}

func (p *creates) get(claim string) *Create {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[claim]
}

func (p *creates) remove(claim string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, claim)
}

// Expect registers a create before its row is inserted, so that the
// controller, seeing the row, finishes the create instead of undoing it.
func (c *Controller) Expect(name, claim string, secrets domain.ValidatorSecrets) *Create {
	cr := &Create{Name: name, Claim: claim, Secrets: secrets, done: make(chan struct{})}
	c.creates.add(cr)
	return cr
}

// Cancel withdraws a create whose row was never inserted.
func (c *Controller) Cancel(cr *Create) { c.creates.remove(cr.Claim) }

// Wait enqueues the create's validator and waits for the controller to
// finish it. When ctx ends first, the create is given up (the controller
// undoes it) unless the controller had already committed to finishing it,
// in which case Wait still returns its outcome.
func (c *Controller) Wait(ctx context.Context, cr *Create) (*domain.CreatedUser, error) {
	defer c.creates.remove(cr.Claim)
	if !c.provisionHere(cr) {
		c.Enqueue(cr.Name)
	}
	// Asked again every few seconds: a validator whose earlier reconciles
	// failed may sit in the queue's backoff, which must not hold up a
	// create someone waits for.
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-cr.done:
			waiting = false
		case <-tick.C:
			c.Enqueue(cr.Name)
		case <-ctx.Done():
			if cr.abandon() {
				c.Enqueue(cr.Name)
				return nil, domain.Unavailable("validator %q was not provisioned in time; the create is undone, try again", cr.Name)
			}
			<-cr.done
			waiting = false
		}
	}
	if cr.err != nil && !errors.Is(cr.err, domain.ErrInvalid) {
		// After the name is recorded, a failing step is the server's
		// problem, not the caller's: 500, the cause in the log.
		return nil, domain.Internal(fmt.Errorf("create validator %q: %w", cr.Name, cr.err))
	}
	return cr.user, cr.err
}

// provisionHere provisions cr in this process when the controller does not
// run here but StartCreates does; false otherwise (the controller's worker
// provisions it). Should this process become the leader meanwhile, take
// keeps the two from provisioning the same create.
func (c *Controller) provisionHere(cr *Create) bool {
	if c.Running() {
		return false
	}
	c.localMu.Lock()
	ctx := c.local
	if ctx != nil {
		c.localWG.Add(1)
	}
	c.localMu.Unlock()
	if ctx == nil {
		return false
	}
	go func() {
		defer c.localWG.Done()
		if !cr.take() {
			return
		}
		in, err := c.store.ValidatorIntent(ctx, cr.Name)
		if err != nil {
			// Nothing was made; the leader undoes the row after the grace.
			c.creates.remove(cr.Claim)
			cr.finish(nil, fmt.Errorf("read the record: %w", err))
			return
		}
		if err := c.finishCreate(ctx, in, cr); err != nil && ctx.Err() == nil {
			c.log.Warn("undoing a failed create; the leader finishes the undo", "validator", cr.Name, "error", err)
		}
	}()
	return true
}

// Await waits, at most until ctx ends, for the create of claim to finish
// when it is in flight in this process.
func (c *Controller) Await(ctx context.Context, claim string) {
	if cr := c.creates.get(claim); cr != nil {
		select {
		case <-cr.done:
		case <-ctx.Done():
		}
	}
}
