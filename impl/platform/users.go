package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) CreateUser(ctx context.Context, req platform.CreateUserRequestObject) (platform.CreateUserResponseObject, error) {
	return nil, notBuilt("createUser", needsLedger)
}

func (s *Server) UpdateUser(ctx context.Context, req platform.UpdateUserRequestObject) (platform.UpdateUserResponseObject, error) {
	return nil, notBuilt("updateUser", needsLedger)
}

func (s *Server) ListUserRights(ctx context.Context, req platform.ListUserRightsRequestObject) (platform.ListUserRightsResponseObject, error) {
	return nil, notBuilt("listUserRights", needsLedger)
}

func (s *Server) UpdateUserRights(ctx context.Context, req platform.UpdateUserRightsRequestObject) (platform.UpdateUserRightsResponseObject, error) {
	return nil, notBuilt("updateUserRights", needsLedger)
}
