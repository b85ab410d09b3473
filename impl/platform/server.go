// Package platform implements release 2.0 of the API (base path /api/v1,
// plus the public actuator and documentation paths).
package platform

import (
	"context"
	"log/slog"

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
}

// Server serves release 2.0.
type Server struct {
	health  map[string]Pinger
	version string
	docs    *docs.Docs
	cluster Resources
	// upstreams: see Options.Upstreams.
	upstreams Upstreams
	log       *slog.Logger
	// The descriptions as the generated response types want them, decoded once.
	platformDoc, managementDoc platformapi.ApiDocument
}

// New returns the release 2.0 handlers.
func New(o Options) *Server {
	s := &Server{health: o.Health, version: o.Version, docs: o.Docs}
	s.cluster = o.Resources
	s.upstreams = o.Upstreams
	s.log = o.Logger
	if o.Docs != nil {
		s.platformDoc = mustDecode(o.Docs.Platform)
		s.managementDoc = mustDecode(o.Docs.Management)
	}
	return s
}

// notBuilt is the answer of an operation this build does not serve yet.
func notBuilt(operation, missing string) error {
	return domain.NotImplemented(operation, missing)
}

const (
	needsCluster = "the release 2.0 cluster resource reader (Validator/Application informers) is not built yet"
	needsLedger  = "the release 2.0 upstream proxy (ledger JSON API, participant admin API, scan, validator app) is not built yet"
	needsConsole = "the release 2.0 ledger console stream is not built yet"
	needsGateway = "the release 2.0 wallet gateway custody integration is not built yet"
)
