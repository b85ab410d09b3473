package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) GetValidatorDetails(ctx context.Context, req platform.GetValidatorDetailsRequestObject) (platform.GetValidatorDetailsResponseObject, error) {
	return nil, notBuilt("getValidatorDetails", needsLedger)
}

func (s *Server) GetValidatorBalances(ctx context.Context, req platform.GetValidatorBalancesRequestObject) (platform.GetValidatorBalancesResponseObject, error) {
	return nil, notBuilt("getValidatorBalances", needsLedger)
}

func (s *Server) GetValidatorTrafficStatus(ctx context.Context, req platform.GetValidatorTrafficStatusRequestObject) (platform.GetValidatorTrafficStatusResponseObject, error) {
	return nil, notBuilt("getValidatorTrafficStatus", needsLedger)
}

func (s *Server) GetParticipantStatus(ctx context.Context, req platform.GetParticipantStatusRequestObject) (platform.GetParticipantStatusResponseObject, error) {
	return nil, notBuilt("getParticipantStatus", needsLedger)
}

func (s *Server) GetValidatorKeys(ctx context.Context, req platform.GetValidatorKeysRequestObject) (platform.GetValidatorKeysResponseObject, error) {
	return nil, notBuilt("getValidatorKeys", needsLedger)
}

func (s *Server) GetIdentityDump(ctx context.Context, req platform.GetIdentityDumpRequestObject) (platform.GetIdentityDumpResponseObject, error) {
	return nil, notBuilt("getIdentityDump", needsLedger)
}
