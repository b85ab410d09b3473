package management

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

type statesCluster struct {
	Cluster
	states map[string]domain.ValidatorState
}

func (c statesCluster) ValidatorStates(context.Context) (map[string]domain.ValidatorState, error) {
	return c.states, nil
}

type statesStore struct {
	Store
	rows   map[string]domain.ValidatorState // shown rows
	reads  int
	writes []string
}

func (s *statesStore) ValidatorStates(context.Context) (map[string]domain.ValidatorState, error) {
	s.reads++
	out := map[string]domain.ValidatorState{}
	for k, v := range s.rows {
		out[k] = v
	}
	return out, nil
}

func (s *statesStore) SyncValidatorState(_ context.Context, name string, st domain.ValidatorState) error {
	s.writes = append(s.writes, name)
	if _, ok := s.rows[name]; ok {
		s.rows[name] = domain.ValidatorState{Phase: st.Phase, DisableUserEdit: st.DisableUserEdit}
	}
	return nil
}

// TestSyncStatesWritesWhatDiffers: a pass writes the validators whose state
// differs from the database's, reads the database whole only every
// statesRefresh, and keeps writing a validator it does not know (created
// since, or still creating) until a read knows it.
func TestSyncStatesWritesWhatDiffers(t *testing.T) {
	running := domain.ValidatorState{Phase: domain.PhaseRunning}
	pending := domain.ValidatorState{Phase: domain.PhasePending}
	cluster := statesCluster{states: map[string]domain.ValidatorState{"a": running, "b": running, "c": running}}
	store := &statesStore{rows: map[string]domain.ValidatorState{"a": running, "b": pending}} // c is creating
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	s := &Server{store: store, cluster: cluster, now: func() time.Time { return now }}
	ctx := context.Background()

	pass := func(wantReads int, wantWrites ...string) {
		t.Helper()
		store.writes = nil
		if err := s.SyncStatesOnce(ctx); err != nil {
			t.Fatal(err)
		}
		slices.Sort(store.writes)
		if store.reads != wantReads || len(store.writes) != len(wantWrites) {
			t.Fatalf("got %d reads, writes %v; want %d reads, writes %v", store.reads, store.writes, wantReads, wantWrites)
		}
		for i, w := range wantWrites {
			if store.writes[i] != w {
				t.Fatalf("writes %v, want %v", store.writes, wantWrites)
			}
		}
	}
	pass(1, "b", "c")         // b differs; c is unknown (creating)
	pass(1, "c")              // b in step now; c still unknown
	store.rows["c"] = pending // c's create finished: PENDING
	pass(1, "c")
	if store.rows["c"] != running {
		t.Errorf("c after its create: got %v, want RUNNING", store.rows["c"])
	}
	now = now.Add(statesRefresh)
	pass(2) // read again: everything known and in step
	pass(2)
	cluster.states["a"] = domain.ValidatorState{Phase: domain.PhaseCompleted, DisableUserEdit: true}
	pass(2, "a")
	pass(2)
}
