// Package management implements release 1.11 of the API (base path /api):
// validators, their pruning and backup schedules, remote participants.
package management

import (
	"github.com/validator-manager/validator-manager/gen/management"
	"github.com/validator-manager/validator-manager/impl/domain"
)

var _ management.StrictServerInterface = (*Server)(nil)

// Server serves release 1.11.
type Server struct{}

// New returns the release 1.11 handlers.
func New() *Server { return &Server{} }

// notBuilt is the answer of an operation this build does not serve yet.
func notBuilt(operation string) error {
	return domain.NotImplemented(operation, "the validator store, cluster gateway and identity provider of release 1.11 are not built yet")
}
