// Package platform implements release 2.0 of the API (base path /api/v1,
// plus the public actuator and documentation paths).
package platform

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/docs"
	"github.com/validator-manager/validator-manager/impl/domain"
)

var _ platformapi.StrictServerInterface = (*Server)(nil)

// Pinger is a dependency whose health /actuator/health reports.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Options is what release 2.0 is built from.
type Options struct {
	// Health names the checked dependencies: "db" and "cluster".
	Health  map[string]Pinger
	Version string
	Docs    *docs.Docs
	// Resources serves the Validator and Application reads and metrics; nil: 501.
	Resources Resources
	// Upstreams reaches validators' ledger, scan and validator app; nil
	// leaves the proxy operations at 501.
	Upstreams Upstreams
	// Logger gets what a 200 answer hides (a view's failed section).
	Logger *slog.Logger
	// Leader reports this replica's role in the leader election, shown in
	// /actuator/health; nil: no election (one process), not shown.
	Leader func() LeaderElection
	// Gateway records the wallet gateway state, sealing credentials under
	// Keys; nil leaves its operations at 501.
	Gateway GatewayStore
	Keys    PasswordKeys
	// Console opens participant consoles; nil leaves the console at 501.
	Console ConsoleOptions
	// Audit reads the audit log; nil leaves listAuditEntries at 501.
	Audit AuditLog
}

// AuditLog is the audit log as listAuditEntries reads it (the database).
type AuditLog interface {
	FindAudit(ctx context.Context, f domain.AuditFilter) ([]domain.AuditEntry, error)
}

// Server serves release 2.0.
type Server struct {
	Options
	// The descriptions as the generated response types want them, decoded once.
	platformDoc, managementDoc platformapi.ApiDocument
	// lastHealth is the last health report (actuator.go); healthFlight runs
	// one check at a time, whose report the probes meanwhile share.
	lastHealth   atomic.Pointer[healthReport]
	healthFlight singleflight.Group
	now          func() time.Time
}

// New returns the release 2.0 handlers.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Console.IdleTimeout <= 0 {
		o.Console.IdleTimeout = DefaultConsoleIdleTimeout
	}
	s := &Server{Options: o, now: time.Now}
	if o.Docs != nil {
		s.platformDoc = mustDecode(o.Docs.Platform)
		s.managementDoc = mustDecode(o.Docs.Management)
	}
	return s
}

// notWired is the answer of a built operation whose part this server was
// assembled without (a test server, or a process wired for one release).
func notWired(operation, part string) error {
	return &domain.Error{Code: domain.CodeNotImplemented, Message: fmt.Sprintf("%s is not available: this server was started without %s", operation, part)}
}
