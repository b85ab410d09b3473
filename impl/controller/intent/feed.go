package intent

import (
	"context"
	"time"

	"github.com/validator-manager/validator-manager/impl/controller/changefeed"
)

const (
	namesPage   = 500
	changesPage = 500
)

// feed makes the cluster's password key when there is none (handlers
// answer 503 until then), names every validator known at start, then
// follows the database's change feed.
func (c *Controller) feed(ctx context.Context) error {
	if !c.cluster.WaitForSync(ctx) {
		return nil
	}
	if _, err := c.cluster.PasswordKey(ctx); err != nil && ctx.Err() == nil {
		c.log.Warn("the cluster's password key could not be made yet; creates answer 503 until it is", "error", err)
	}
	var names []string
	var initial map[string]bool
	if !changefeed.Retry(ctx, c.changes, func(ctx context.Context) (err error) {
		names, initial, err = c.allNames(ctx)
		return err
	}, func(err error) { c.log.Warn("reading the validators to reconcile; retrying", "error", err) }) {
		return nil
	}
	c.began.CompareAndSwap(0, time.Now().UnixNano())
	c.mu.Lock()
	c.initial = initial
	if len(names) == 0 {
		c.markSynced()
	}
	c.mu.Unlock()
	c.running.Store(true)
	defer c.running.Store(false)
	changefeed.Send(ctx, c.names, names)
	changefeed.Follow(ctx, c.changes, changesPage, c.store.TakeChanges, c.names, func(err error) {
		c.log.Warn("reading the validators' change feed", "error", err)
	})
	return nil
}

// allNames names every validator of the database and every managed
// resource, in a list and a set.
func (c *Controller) allNames(ctx context.Context) ([]string, map[string]bool, error) {
	seen := map[string]bool{}
	var names []string
	for after := ""; ; {
		page, err := c.store.ValidatorNames(ctx, after, namesPage)
		if err != nil {
			return nil, nil, err
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
		return nil, nil, err
	}
	for _, n := range managed {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names, seen, nil
}
