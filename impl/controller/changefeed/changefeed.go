// Package changefeed follows a database change feed, which every replica's
// handlers write, for a leader's controller's channel source.
package changefeed

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Take removes and returns at most limit names from a feed.
type Take func(ctx context.Context, limit int) ([]string, error)

// Follow takes the feed every interval until ctx ends, page names at a
// time, and sends each to names. A take that fails is handed to warn and
// tried again at the next tick: what it would have taken stays in the feed.
func Follow(ctx context.Context, interval time.Duration, page int, take Take, names chan<- event.TypedGenericEvent[string], warn func(error)) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		for {
			taken, err := take(ctx, page)
			if err != nil {
				if ctx.Err() == nil {
					warn(err)
				}
				return
			}
			Send(ctx, names, taken)
			if len(taken) < page {
				return
			}
		}
	}, interval)
}

// Send hands each name to names, waiting for room, until ctx ends.
func Send(ctx context.Context, names chan<- event.TypedGenericEvent[string], taken []string) {
	for _, n := range taken {
		select {
		case names <- event.TypedGenericEvent[string]{Object: n}:
		case <-ctx.Done():
			return
		}
	}
}

// Retry calls read every interval until it succeeds, handing each failure to
// warn; false when ctx ended first. A leader's first read of its database
// waits out a passing failure instead of stopping the Manager.
func Retry(ctx context.Context, interval time.Duration, read func(context.Context) error, warn func(error)) bool {
	return wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		if err := read(ctx); err != nil {
			if ctx.Err() == nil {
				warn(err)
			}
			return false, nil
		}
		return true, nil
	}) == nil
}
