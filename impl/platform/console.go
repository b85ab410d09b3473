package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

// OpenLedgerConsole is never routed: the console is served by
// LedgerConsole, a plain handler that can take over the connection.
func (s *Server) OpenLedgerConsole(ctx context.Context, req platformapi.OpenLedgerConsoleRequestObject) (platformapi.OpenLedgerConsoleResponseObject, error) {
	return nil, notWired("openLedgerConsole", partConsole)
}
