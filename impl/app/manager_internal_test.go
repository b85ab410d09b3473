package app

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// adds keeps what is added to it; the rest of the Manager is not used.
type adds struct {
	manager.Manager
	added []manager.Runnable
}

func (m *adds) Add(r manager.Runnable) error {
	m.added = append(m.added, r)
	return nil
}

// TestHeldBack: a Runnable added through heldBack starts once until is
// closed, or once most has passed, whichever is first; not at all when its
// context ends before; and keeps its own answer to NeedLeaderElection.
func TestHeldBack(t *testing.T) {
	// Bounds far apart, so that a loaded machine does not move a start
	// from one side of a bound to the other.
	const short, long = 200 * time.Millisecond, 10 * time.Second
	for _, tt := range []struct {
		name      string
		most      time.Duration
		closeIn   time.Duration // < 0: never closed
		cancelIn  time.Duration // < 0: never cancelled
		started   bool
		at, until time.Duration // when it starts, within
	}{
		{name: "already in step", most: long, closeIn: 0, cancelIn: -1, started: true, at: 0, until: long},
		{name: "in step later", most: long, closeIn: short, cancelIn: -1, started: true, at: short, until: long},
		{name: "never in step", most: short, closeIn: -1, cancelIn: -1, started: true, at: short, until: long},
		{name: "stopped first", most: long, closeIn: -1, cancelIn: short, started: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Before the timers: a start is measured from no later than
			// what makes it.
			begin := time.Now()
			until := make(chan struct{})
			if tt.closeIn == 0 {
				close(until)
			} else if tt.closeIn > 0 {
				time.AfterFunc(tt.closeIn, func() { close(until) })
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelIn >= 0 {
				time.AfterFunc(tt.cancelIn, cancel)
			}
			m := &adds{}
			startedAt := make(chan time.Duration, 1)
			if err := (heldBack{Manager: m, until: until, most: tt.most}).Add(manager.RunnableFunc(func(context.Context) error {
				startedAt <- time.Since(begin)
				return nil
			})); err != nil {
				t.Fatal(err)
			}
			if len(m.added) != 1 {
				t.Fatalf("added %d runnables, want 1", len(m.added))
			}
			if err := m.added[0].Start(ctx); err != nil {
				t.Fatalf("Start: %v", err)
			}
			select {
			case at := <-startedAt:
				if !tt.started {
					t.Fatalf("started after %s although stopped before", at)
				}
				if at < tt.at || at > tt.until {
					t.Errorf("started after %s, want between %s and %s", at, tt.at, tt.until)
				}
			default:
				if tt.started {
					t.Fatal("Start returned without starting the held runnable")
				}
			}
		})
	}

	for _, tt := range []struct {
		name string
		r    manager.Runnable
		want bool
	}{
		{"a leader's", runnable(true, nil), true},
		{"every replica's", runnable(false, nil), false},
		{"no answer of its own (controller-runtime: the leader's)", manager.RunnableFunc(nil), true},
	} {
		m := &adds{}
		if err := (heldBack{Manager: m}).Add(tt.r); err != nil {
			t.Fatal(err)
		}
		if got := m.added[0].(manager.LeaderElectionRunnable).NeedLeaderElection(); got != tt.want {
			t.Errorf("%s: NeedLeaderElection %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestOnThisMachine: the API servers whose answers are not compressed are
// those on the loopback interface, in each form a rest.Config's host takes.
func TestOnThisMachine(t *testing.T) {
	for host, want := range map[string]bool{
		"https://127.0.0.1:6443":       true,
		"https://127.0.0.2":            true,
		"https://[::1]:6443":           true,
		"https://localhost:6443":       true,
		"127.0.0.1:6443":               true,
		"https://api.cluster.test:443": false,
		"https://api.cluster.test":     false,
		"api.cluster.test:6443":        false,
		"":                             false,
	} {
		if got := onThisMachine(host); got != want {
			t.Errorf("onThisMachine(%q) = %v, want %v", host, got, want)
		}
	}
}
