package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) UploadDar(ctx context.Context, req platform.UploadDarRequestObject) (platform.UploadDarResponseObject, error) {
	return nil, notBuilt("uploadDar", needsLedger)
}
