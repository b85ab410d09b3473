package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) ListValidators(ctx context.Context, req platformapi.ListValidatorsRequestObject) (platformapi.ListValidatorsResponseObject, error) {
	return nil, notBuilt("listValidators", needsCluster)
}

func (s *Server) GetValidator(ctx context.Context, req platformapi.GetValidatorRequestObject) (platformapi.GetValidatorResponseObject, error) {
	return nil, notBuilt("getValidator", needsCluster)
}

func (s *Server) GetValidatorStatus(ctx context.Context, req platformapi.GetValidatorStatusRequestObject) (platformapi.GetValidatorStatusResponseObject, error) {
	return nil, notBuilt("getValidatorStatus", needsCluster)
}
