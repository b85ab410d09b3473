package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) ListValidators(ctx context.Context, req platform.ListValidatorsRequestObject) (platform.ListValidatorsResponseObject, error) {
	return nil, notBuilt("listValidators", needsCluster)
}

func (s *Server) GetValidator(ctx context.Context, req platform.GetValidatorRequestObject) (platform.GetValidatorResponseObject, error) {
	return nil, notBuilt("getValidator", needsCluster)
}

func (s *Server) GetValidatorStatus(ctx context.Context, req platform.GetValidatorStatusRequestObject) (platform.GetValidatorStatusResponseObject, error) {
	return nil, notBuilt("getValidatorStatus", needsCluster)
}
