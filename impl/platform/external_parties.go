package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) GenerateExternalPartyTopology(ctx context.Context, req platformapi.GenerateExternalPartyTopologyRequestObject) (platformapi.GenerateExternalPartyTopologyResponseObject, error) {
	return nil, notBuilt("generateExternalPartyTopology", needsLedger)
}

func (s *Server) AllocateExternalParty(ctx context.Context, req platformapi.AllocateExternalPartyRequestObject) (platformapi.AllocateExternalPartyResponseObject, error) {
	return nil, notBuilt("allocateExternalParty", needsLedger)
}

func (s *Server) ApprovePendingHosting(ctx context.Context, req platformapi.ApprovePendingHostingRequestObject) (platformapi.ApprovePendingHostingResponseObject, error) {
	return nil, notBuilt("approvePendingHosting", needsLedger)
}

func (s *Server) PrepareAmendHosting(ctx context.Context, req platformapi.PrepareAmendHostingRequestObject) (platformapi.PrepareAmendHostingResponseObject, error) {
	return nil, notBuilt("prepareAmendHosting", needsLedger)
}

func (s *Server) SubmitAmendHosting(ctx context.Context, req platformapi.SubmitAmendHostingRequestObject) (platformapi.SubmitAmendHostingResponseObject, error) {
	return nil, notBuilt("submitAmendHosting", needsLedger)
}
