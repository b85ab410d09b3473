package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) ListParties(ctx context.Context, req platform.ListPartiesRequestObject) (platform.ListPartiesResponseObject, error) {
	return nil, notBuilt("listParties", needsLedger)
}

func (s *Server) AllocateParty(ctx context.Context, req platform.AllocatePartyRequestObject) (platform.AllocatePartyResponseObject, error) {
	return nil, notBuilt("allocateParty", needsLedger)
}

func (s *Server) ListLocalParties(ctx context.Context, req platform.ListLocalPartiesRequestObject) (platform.ListLocalPartiesResponseObject, error) {
	return nil, notBuilt("listLocalParties", needsLedger)
}

func (s *Server) ListExternalParties(ctx context.Context, req platform.ListExternalPartiesRequestObject) (platform.ListExternalPartiesResponseObject, error) {
	return nil, notBuilt("listExternalParties", needsLedger)
}

func (s *Server) ListTopologyProposals(ctx context.Context, req platform.ListTopologyProposalsRequestObject) (platform.ListTopologyProposalsResponseObject, error) {
	return nil, notBuilt("listTopologyProposals", needsLedger)
}

func (s *Server) LookupParticipant(ctx context.Context, req platform.LookupParticipantRequestObject) (platform.LookupParticipantResponseObject, error) {
	return nil, notBuilt("lookupParticipant", needsLedger)
}
