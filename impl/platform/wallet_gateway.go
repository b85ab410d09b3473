package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) ListGatewayWallets(ctx context.Context, req platformapi.ListGatewayWalletsRequestObject) (platformapi.ListGatewayWalletsResponseObject, error) {
	return nil, notBuilt("listGatewayWallets", needsGateway)
}

func (s *Server) CreateGatewayWallet(ctx context.Context, req platformapi.CreateGatewayWalletRequestObject) (platformapi.CreateGatewayWalletResponseObject, error) {
	return nil, notBuilt("createGatewayWallet", needsGateway)
}

func (s *Server) GetCustodyProviderSettings(ctx context.Context, req platformapi.GetCustodyProviderSettingsRequestObject) (platformapi.GetCustodyProviderSettingsResponseObject, error) {
	return nil, notBuilt("getCustodyProviderSettings", needsGateway)
}

func (s *Server) UpdateCustodyProviderSettings(ctx context.Context, req platformapi.UpdateCustodyProviderSettingsRequestObject) (platformapi.UpdateCustodyProviderSettingsResponseObject, error) {
	return nil, notBuilt("updateCustodyProviderSettings", needsGateway)
}
