package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) ListWalletUsers(ctx context.Context, req platform.ListWalletUsersRequestObject) (platform.ListWalletUsersResponseObject, error) {
	return nil, notBuilt("listWalletUsers", needsLedger)
}

func (s *Server) OnboardWalletUser(ctx context.Context, req platform.OnboardWalletUserRequestObject) (platform.OnboardWalletUserResponseObject, error) {
	return nil, notBuilt("onboardWalletUser", needsLedger)
}

func (s *Server) OffboardWalletUser(ctx context.Context, req platform.OffboardWalletUserRequestObject) (platform.OffboardWalletUserResponseObject, error) {
	return nil, notBuilt("offboardWalletUser", needsLedger)
}
