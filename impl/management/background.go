package management

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/telemetry"
)

// ProbeParticipants records, every interval, whether each remote
// participant's admin API accepts a TCP connection within timeout.
func (s *Server) ProbeParticipants(ctx context.Context, interval, timeout time.Duration) {
	wait.NonSlidingUntilWithContext(ctx, func(ctx context.Context) {
		if err := s.ProbeParticipantsOnce(ctx, timeout); err != nil && ctx.Err() == nil {
			s.Logger.WarnContext(ctx, "probing remote participants", "error", err)
		}
	}, interval)
}

// probeParallelism bounds the connections one probe pass opens at once.
const probeParallelism = 8

// ProbeParticipantsOnce is one pass of ProbeParticipants.
func (s *Server) ProbeParticipantsOnce(ctx context.Context, timeout time.Duration) error {
	var g errgroup.Group
	g.SetLimit(probeParallelism)
	defer g.Wait() // no probe of this pass outlives it, whatever the return
	for offset := 0; ; {
		rows, total, err := s.Store.ListRemoteParticipants(ctx, domain.RemoteParticipantFilter{Page: domain.Page{Offset: offset, Limit: 500}})
		if err != nil {
			return err
		}
		for _, p := range rows {
			g.Go(func() error {
				// A participant removed meanwhile has no record to update.
				if err := s.probe(ctx, p, timeout); !isNotFound(err) {
					return err
				}
				return nil
			})
		}
		offset += len(rows)
		if len(rows) == 0 || int64(offset) >= total {
			return g.Wait()
		}
	}
}

// probe checks one participant's admin API and records the result. An
// address the outbound policy refuses is not dialled, and the participant's
// health is then unknown, as before its first probe.
func (s *Server) probe(ctx context.Context, p domain.RemoteParticipant, timeout time.Duration) error {
	if err := s.ParticipantAddresses.CheckHost(p.AdminAddress, p.AdminPort); err != nil {
		s.Logger.InfoContext(ctx, "remote participant not probed: the outbound address policy refuses its admin address",
			"participant", p.Name, "reason", err.Error())
		s.ObserveProbe(telemetry.ProbeNotProbed)
		if p.Healthy == nil && p.LastCheckedAt == nil {
			return nil
		}
		return s.Store.ForgetParticipantHealth(ctx, p.Name)
	}
	conn, err := s.Dial(ctx, timeout, p.AdminAddress, p.AdminPort)
	healthy := err == nil
	outcome := telemetry.ProbeUnhealthy
	if healthy {
		conn.Close()
		outcome = telemetry.ProbeHealthy
	}
	s.ObserveProbe(outcome)
	return s.Store.RecordParticipantHealth(ctx, p.Name, healthy, s.Now().UTC())
}
