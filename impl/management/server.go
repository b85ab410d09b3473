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
	Store   Store
	Cluster Cluster
	// Intent is the controller that makes the identity provider and the
	// cluster what a record says (impl/controller/intent).
	Intent    Intent
	Namespace string
	Logger    *slog.Logger
	// Now is the clock (tests inject one); time.Now when nil.
	Now func() time.Time
	// ValidatorAddresses checks a validator's scanAddress and
	// auth.oidcAuthorityUrl when they are written (the server calls them
	// with credentials); ParticipantAddresses a remote participant's admin
	// address before each probe (a registration is stored whatever it
	// says).
	ValidatorAddresses, ParticipantAddresses Addresses
	// Dial opens the health probe's connection.
	Dial func(ctx context.Context, timeout time.Duration, host, port string) (net.Conn, error)
	// ObserveProbe counts each probe by outcome (telemetry.Probe*).
	ObserveProbe func(outcome string)
	// Charts checks a create or an edit against Splice's charts in chart
	// mode; nil: chart mode is off.
	Charts Charts
	// Release, in chart mode, is the namespace of a validator's release,
	// where Splice's charts name the Services without the validator: the
	// addresses shown are there; nil: <validator>-<service> in Namespace.
	Release func(validator string) string
}

// Server serves release 1.11. Its handlers validate, record what the
// operator asked for in the database (secret values too, sealed) and leave
// the rest to the elected leader's intent controller; they never write the
// identity provider or the cluster.
type Server struct {
	Options
	// template renders list items (listview.go), made at the first page.
	templateOnce sync.Once
	template     *itemTemplate
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
// controller to bring the cluster to it. op names the change for the fault
// point "<op>.written", after the record, where a crash test kills the
// process.
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
