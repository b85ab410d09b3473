package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) UploadDar(ctx context.Context, req platformapi.UploadDarRequestObject) (platformapi.UploadDarResponseObject, error) {
	return nil, notBuilt("uploadDar", needsLedger)
}
