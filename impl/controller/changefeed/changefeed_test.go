package changefeed_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/validator-manager/validator-manager/impl/controller/changefeed"
)

// TestFollow: a tick drains the feed page by page (a full page is followed
// by another take at once), a failed take is warned about and retried at
// the next tick, and Follow returns when ctx ends.
func TestFollow(t *testing.T) {
	var mu sync.Mutex
	feed := []string{"a", "b", "c", "d", "e"}
	fail := true
	take := func(_ context.Context, limit int) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			fail = false
			return nil, errors.New("database down")
		}
		n := min(limit, len(feed))
		taken := feed[:n]
		feed = feed[n:]
		return taken, nil
	}
	names := make(chan event.TypedGenericEvent[string], 10)
	warned := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		changefeed.Follow(ctx, 10*time.Millisecond, 2, take, names, func(err error) { warned <- err })
		close(done)
	}()
	if err := <-warned; err == nil || err.Error() != "database down" {
		t.Fatalf("warned %v, want the take's error", err)
	}
	var got []string
	for len(got) < 5 {
		select {
		case e := <-names:
			got = append(got, e.Object)
		case <-time.After(5 * time.Second):
			t.Fatalf("got %v, want every name of the feed", got)
		}
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not return when its context ended")
	}
}

func TestRetry(t *testing.T) {
	fails := 2
	var warned []error
	read := func(context.Context) error {
		if fails > 0 {
			fails--
			return errors.New("database is locked")
		}
		return nil
	}
	if !changefeed.Retry(context.Background(), time.Millisecond, read, func(err error) { warned = append(warned, err) }) {
		t.Fatal("Retry gave up on a read that succeeds on its third try")
	}
	if fails != 0 || len(warned) != 2 {
		t.Fatalf("%d failures left, %d warned; want every failure tried again and warned of", fails, len(warned))
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if changefeed.Retry(ctx, time.Millisecond, func(context.Context) error { return errors.New("down") }, func(error) {}) {
		t.Fatal("Retry reported success for a read that never succeeded")
	}
}
