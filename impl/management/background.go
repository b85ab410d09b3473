package management

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

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
				// The probe follows the outbound address policy: a refused
				// address (stored before the policy, or since disallowed) is
				// not dialled and reads unhealthy.
				var conn net.Conn
				err := error(nil)
				if s.participantAddresses != nil {
					err = s.participantAddresses.CheckHost(p.AdminAddress, p.AdminPort)
				}
				if err == nil {
					conn, err = s.dial(ctx, timeout, p.AdminAddress, p.AdminPort)
				} else {
					s.log.WarnContext(ctx, "remote participant not probed", "participant", p.Name, "error", err)
				}
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
