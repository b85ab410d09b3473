package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) OpenLedgerConsole(ctx context.Context, req platformapi.OpenLedgerConsoleRequestObject) (platformapi.OpenLedgerConsoleResponseObject, error) {
	return nil, notBuilt("openLedgerConsole", needsConsole)
}
