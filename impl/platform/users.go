package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) CreateUser(ctx context.Context, req platformapi.CreateUserRequestObject) (platformapi.CreateUserResponseObject, error) {
	return nil, notBuilt("createUser", needsLedger)
}

func (s *Server) UpdateUser(ctx context.Context, req platformapi.UpdateUserRequestObject) (platformapi.UpdateUserResponseObject, error) {
	return nil, notBuilt("updateUser", needsLedger)
}

func (s *Server) ListUserRights(ctx context.Context, req platformapi.ListUserRightsRequestObject) (platformapi.ListUserRightsResponseObject, error) {
	return nil, notBuilt("listUserRights", needsLedger)
}

func (s *Server) UpdateUserRights(ctx context.Context, req platformapi.UpdateUserRightsRequestObject) (platformapi.UpdateUserRightsResponseObject, error) {
	return nil, notBuilt("updateUserRights", needsLedger)
}
