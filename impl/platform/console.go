package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) OpenLedgerConsole(ctx context.Context, req platform.OpenLedgerConsoleRequestObject) (platform.OpenLedgerConsoleResponseObject, error) {
	return nil, notBuilt("openLedgerConsole", needsConsole)
}
