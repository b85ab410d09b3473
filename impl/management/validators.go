package management

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/management"
)

func (s *Server) ListValidators(ctx context.Context, req management.ListValidatorsRequestObject) (management.ListValidatorsResponseObject, error) {
	return nil, notBuilt("listValidators")
}

func (s *Server) CreateValidator(ctx context.Context, req management.CreateValidatorRequestObject) (management.CreateValidatorResponseObject, error) {
	return nil, notBuilt("createValidator")
}

func (s *Server) UpdateValidator(ctx context.Context, req management.UpdateValidatorRequestObject) (management.UpdateValidatorResponseObject, error) {
	return nil, notBuilt("updateValidator")
}
