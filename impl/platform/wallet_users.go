package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) ListWalletUsers(ctx context.Context, req platformapi.ListWalletUsersRequestObject) (platformapi.ListWalletUsersResponseObject, error) {
	return nil, notBuilt("listWalletUsers", needsLedger)
}

func (s *Server) OnboardWalletUser(ctx context.Context, req platformapi.OnboardWalletUserRequestObject) (platformapi.OnboardWalletUserResponseObject, error) {
	return nil, notBuilt("onboardWalletUser", needsLedger)
}

func (s *Server) OffboardWalletUser(ctx context.Context, req platformapi.OffboardWalletUserRequestObject) (platformapi.OffboardWalletUserResponseObject, error) {
	return nil, notBuilt("offboardWalletUser", needsLedger)
}
