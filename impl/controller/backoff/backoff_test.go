package backoff_test

import (
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/controller/backoff"
)

// A failing object waits at most Max however often it failed: after an
// outage of many minutes it is tried again within Max of the fault
// clearing.
func TestBackoffIsBounded(t *testing.T) {
	rl := backoff.RateLimiter[string](time.Second)
	var last time.Duration
	for range 40 {
		last = rl.When("v")
	}
	if last != backoff.Max {
		t.Fatalf("after 40 failures: wait %s, want %s", last, backoff.Max)
	}
	rl.Forget("v")
	if got := rl.When("v"); got != time.Second {
		t.Fatalf("after a success: wait %s, want the base 1s", got)
	}
}
