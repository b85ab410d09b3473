package platform

import (
	"context"
	"net/http"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

// OpenLedgerConsole is never routed: the console is served by
// LedgerConsole, a plain handler that can take over the connection.
func (s *Server) OpenLedgerConsole(ctx context.Context, req platformapi.OpenLedgerConsoleRequestObject) (platformapi.OpenLedgerConsoleResponseObject, error) {
	return nil, notBuilt("openLedgerConsole", needsConsole)
}

// LedgerConsole upgrades to the WebSocket console stream (openLedgerConsole).
// It runs behind authentication and request validation like every
// operation, on the raw connection.
func (s *Server) LedgerConsole(w http.ResponseWriter, r *http.Request) error {
	return notBuilt("openLedgerConsole", needsConsole)
}
