// Package management implements release 1.11 of the API (base path /api):
// validators, their pruning and backup schedules, remote participants.
package management

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
)

var _ managementapi.StrictServerInterface = (*Server)(nil)

// Options is what release 1.11 is built from.
type Options struct {
	Store     Store
	Cluster   Cluster
	Intent    Intent
	Namespace string
	Logger    *slog.Logger
	// Now is the clock (tests inject one); time.Now when nil.
	Now func() time.Time
	// ValidatorAddresses checks the addresses a validator's record gives
	// when they are written; ParticipantAddresses a remote participant's
	// admin address before each probe.
	ValidatorAddresses, ParticipantAddresses Addresses
	// Dial opens the health probe's connection.
	Dial func(ctx context.Context, timeout time.Duration, host, port string) (net.Conn, error)
	// ObserveProbe counts each probe by outcome (telemetry.Probe*).
	ObserveProbe func(outcome string)
	// Charts and Release are set in chart mode only: Release is the
	// namespace of a validator's release, whose Services Splice's charts
	// name without the validator.
	Charts  Charts
	Release func(validator string) string
}

// Server serves release 1.11. Its handlers validate and record what the
// operator asked for (secret values too, sealed); only the leader's intent
// controller writes the identity provider and the cluster.
type Server struct {
	Options
	// template renders list items (listview.go), made at the first page.
	templateOnce sync.Once
	template     []string
}

// New returns the release 1.11 handlers.
func New(o Options) *Server {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{Options: o}
}

// record writes a change of a validator's record and asks the intent
// controller to bring the cluster to it; a crash test kills the process at
// the fault point "<op>.written".
func (s *Server) record(ctx context.Context, name, op string, write func(context.Context) error) error {
	if err := write(ctx); err != nil {
		return err
	}
	if faultpoint.Enabled { // else not even the name is built
		faultpoint.Reach(op + ".written")
	}
	s.Intent.Enqueue(name)
	return nil
}

func isNotFound(err error) bool { return errors.Is(err, domain.ErrNotFound) }
