// Package changefeed follows a database change feed, which every replica's
// handlers write, for a leader's controller: it takes it page by page and
// hands the names to the controller's channel source.
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
// time, and sends each to names. A failed take goes to warn (unless ctx
// ended) and is tried at the next tick: what it would take stays.
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
