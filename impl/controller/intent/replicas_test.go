package intent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// A replica that does not run the controller provisions the creates it
// serves (StartCreates) and forwards every other enqueue.
func TestFollowerProvisionsItsCreatesAndForwards(t *testing.T) {
	w := newWorld()
	var mu sync.Mutex
	var forwarded []string
	c, err := New(Options{Store: store{w}, Cluster: cluster{w}, Identity: identity{w},
		Forward: func(name string) { mu.Lock(); forwarded = append(forwarded, name); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.StartCreates(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, func() bool { c.localMu.Lock(); defer c.localMu.Unlock(); return c.local != nil })

	user, err := create(context.Background(), c, w, "alpha")
	if err != nil || user == nil || user.TemporaryPassword == "" {
		t.Fatalf("create on a follower: user %+v, error %v", user, err)
	}
	if row, resource, u := w.has("alpha"); !row || !resource || !u {
		t.Fatalf("after the create: row %v, resource %v, user %v", row, resource, u)
	}
	if w.rows["alpha"].Creating {
		t.Fatal("row still Creating")
	}
	if c.Running() {
		t.Fatal("Running without Start")
	}
	c.Enqueue("alpha")
	mu.Lock()
	defer mu.Unlock()
	if len(forwarded) != 1 || forwarded[0] != "alpha" {
		t.Fatalf("forwarded %v, want [alpha]", forwarded)
	}
}

// The leader leaves a young Creating row it does not provision alone (a
// follower may be provisioning it) and undoes it once the grace is over.
func TestLeaderLeavesOtherReplicasCreatesForTheGrace(t *testing.T) {
	tests := []struct {
		name     string
		age      time.Duration
		wantKept bool
	}{
		{name: "within the grace", age: time.Second, wantKept: true},
		{name: "past the grace", age: 2 * time.Minute, wantKept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			w.rows["beta"] = domain.Validator{Name: "beta", Creating: true, Claim: "claim-beta", CreatedAt: time.Now().Add(-tt.age)}
			c, err := New(Options{Store: store{w}, Cluster: cluster{w}, Identity: identity{w}, CreateGrace: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Reconcile(context.Background(), "beta")
			if err != nil {
				t.Fatal(err)
			}
			row, _, _ := w.has("beta")
			if row != tt.wantKept {
				t.Fatalf("row kept %v, want %v", row, tt.wantKept)
			}
			if tt.wantKept && (res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute) {
				t.Fatalf("RequeueAfter %s, want within the grace", res.RequeueAfter)
			}
		})
	}
}
