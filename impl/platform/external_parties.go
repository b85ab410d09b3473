package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) GenerateExternalPartyTopology(ctx context.Context, req platform.GenerateExternalPartyTopologyRequestObject) (platform.GenerateExternalPartyTopologyResponseObject, error) {
	return nil, notBuilt("generateExternalPartyTopology", needsLedger)
}

func (s *Server) AllocateExternalParty(ctx context.Context, req platform.AllocateExternalPartyRequestObject) (platform.AllocateExternalPartyResponseObject, error) {
	return nil, notBuilt("allocateExternalParty", needsLedger)
}

func (s *Server) ApprovePendingHosting(ctx context.Context, req platform.ApprovePendingHostingRequestObject) (platform.ApprovePendingHostingResponseObject, error) {
	return nil, notBuilt("approvePendingHosting", needsLedger)
}

func (s *Server) PrepareAmendHosting(ctx context.Context, req platform.PrepareAmendHostingRequestObject) (platform.PrepareAmendHostingResponseObject, error) {
	return nil, notBuilt("prepareAmendHosting", needsLedger)
}

func (s *Server) SubmitAmendHosting(ctx context.Context, req platform.SubmitAmendHostingRequestObject) (platform.SubmitAmendHostingResponseObject, error) {
	return nil, notBuilt("submitAmendHosting", needsLedger)
}
