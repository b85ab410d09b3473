package management

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Background work runs until ctx ends. With several replicas only one should
// run it (leader election is not built yet: see the README).

// SyncStates copies what the cluster reports about each validator (phase,
// disableUserEdit) into the database every interval, so that list filters
// and pages, which run in the database, see current phases.
func (s *Server) SyncStates(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := s.SyncStatesOnce(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "syncing validator states from the cluster", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// recordedStates is the phase sync's knowledge of the states the database
// holds: read whole at most every statesRefresh, and kept up to date with
// what the sync writes, so that a pass over many validators in step reads
// the cluster's cache and writes nothing. Only the sync writes phases and
// flags (a create inserts PENDING, which the next pass finds unknown and
// writes if the cluster says otherwise).
type recordedStates struct {
	mu     sync.Mutex
	states map[string]domain.ValidatorState
	read   time.Time
}

// statesRefresh is how old the phase sync's knowledge of the database may
// get before a pass reads it whole again.
const statesRefresh = 5 * time.Minute

// SyncStatesOnce is one pass of SyncStates.
func (s *Server) SyncStatesOnce(ctx context.Context) error {
	states, err := s.cluster.ValidatorStates(ctx)
	if err != nil {
		return err
	}
	r := &s.states
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.states == nil || s.now().Sub(r.read) >= statesRefresh {
		if r.states, err = s.store.ValidatorStates(ctx); err != nil {
			r.states = nil
			return err
		}
		r.read = s.now()
	}
	for name, st := range states {
		known, ok := r.states[name]
		if ok && known.Phase == st.Phase && known.DisableUserEdit == st.DisableUserEdit {
			continue // in step
		}
		if err := s.store.SyncValidatorState(ctx, name, st); err != nil {
			r.states = nil // read it whole next time
			return err
		}
		// A validator unknown here (created since the last read, or still
		// creating: the write leaves its row alone) is written again each
		// pass (a no-op once in step) until the next read knows it.
		if ok {
			r.states[name] = domain.ValidatorState{Phase: st.Phase, DisableUserEdit: st.DisableUserEdit}
		}
	}
	return nil
}

// ProbeParticipants records, every interval, whether each remote
// participant's admin API accepts a TCP connection within timeout.
func (s *Server) ProbeParticipants(ctx context.Context, interval, timeout time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := s.ProbeParticipantsOnce(ctx, timeout); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "probing remote participants", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probeParallelism bounds the connections one probe pass opens at once.
const probeParallelism = 8

// ProbeParticipantsOnce is one pass of ProbeParticipants.
func (s *Server) ProbeParticipantsOnce(ctx context.Context, timeout time.Duration) error {
	sem := make(chan struct{}, probeParallelism)
	var wg sync.WaitGroup
	defer wg.Wait() // no probe of this pass outlives it, whatever the return
	var mu sync.Mutex
	var firstErr error
	for offset := 0; ; {
		rows, total, err := s.store.ListRemoteParticipants(ctx, domain.RemoteParticipantFilter{Page: domain.Page{Offset: offset, Limit: 500}})
		if err != nil {
			return err
		}
		for _, p := range rows {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				d := net.Dialer{Timeout: timeout}
				conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.AdminAddress, p.AdminPort))
				healthy := err == nil
				if healthy {
					conn.Close()
				}
				// A participant removed meanwhile has no record to update.
				if err := s.store.RecordParticipantHealth(ctx, p.Name, healthy, s.now().UTC()); err != nil && !isNotFound(err) {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}()
		}
		offset += len(rows)
		if len(rows) == 0 || int64(offset) >= total {
			break
		}
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}
