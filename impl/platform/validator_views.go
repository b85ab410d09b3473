package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) GetValidatorDetails(ctx context.Context, req platformapi.GetValidatorDetailsRequestObject) (platformapi.GetValidatorDetailsResponseObject, error) {
	return nil, notBuilt("getValidatorDetails", needsLedger)
}

func (s *Server) GetValidatorBalances(ctx context.Context, req platformapi.GetValidatorBalancesRequestObject) (platformapi.GetValidatorBalancesResponseObject, error) {
	return nil, notBuilt("getValidatorBalances", needsLedger)
}

func (s *Server) GetValidatorTrafficStatus(ctx context.Context, req platformapi.GetValidatorTrafficStatusRequestObject) (platformapi.GetValidatorTrafficStatusResponseObject, error) {
	return nil, notBuilt("getValidatorTrafficStatus", needsLedger)
}

func (s *Server) GetParticipantStatus(ctx context.Context, req platformapi.GetParticipantStatusRequestObject) (platformapi.GetParticipantStatusResponseObject, error) {
	return nil, notBuilt("getParticipantStatus", needsLedger)
}

func (s *Server) GetValidatorKeys(ctx context.Context, req platformapi.GetValidatorKeysRequestObject) (platformapi.GetValidatorKeysResponseObject, error) {
	return nil, notBuilt("getValidatorKeys", needsLedger)
}

func (s *Server) GetIdentityDump(ctx context.Context, req platformapi.GetIdentityDumpRequestObject) (platformapi.GetIdentityDumpResponseObject, error) {
	return nil, notBuilt("getIdentityDump", needsLedger)
}
