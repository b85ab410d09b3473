package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) ListGatewayWallets(ctx context.Context, req platform.ListGatewayWalletsRequestObject) (platform.ListGatewayWalletsResponseObject, error) {
	return nil, notBuilt("listGatewayWallets", needsGateway)
}

func (s *Server) CreateGatewayWallet(ctx context.Context, req platform.CreateGatewayWalletRequestObject) (platform.CreateGatewayWalletResponseObject, error) {
	return nil, notBuilt("createGatewayWallet", needsGateway)
}

func (s *Server) GetCustodyProviderSettings(ctx context.Context, req platform.GetCustodyProviderSettingsRequestObject) (platform.GetCustodyProviderSettingsResponseObject, error) {
	return nil, notBuilt("getCustodyProviderSettings", needsGateway)
}

func (s *Server) UpdateCustodyProviderSettings(ctx context.Context, req platform.UpdateCustodyProviderSettingsRequestObject) (platform.UpdateCustodyProviderSettingsResponseObject, error) {
	return nil, notBuilt("updateCustodyProviderSettings", needsGateway)
}
