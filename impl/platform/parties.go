package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) ListParties(ctx context.Context, req platformapi.ListPartiesRequestObject) (platformapi.ListPartiesResponseObject, error) {
	return nil, notBuilt("listParties", needsLedger)
}

func (s *Server) AllocateParty(ctx context.Context, req platformapi.AllocatePartyRequestObject) (platformapi.AllocatePartyResponseObject, error) {
	return nil, notBuilt("allocateParty", needsLedger)
}

func (s *Server) ListLocalParties(ctx context.Context, req platformapi.ListLocalPartiesRequestObject) (platformapi.ListLocalPartiesResponseObject, error) {
	return nil, notBuilt("listLocalParties", needsLedger)
}

func (s *Server) ListExternalParties(ctx context.Context, req platformapi.ListExternalPartiesRequestObject) (platformapi.ListExternalPartiesResponseObject, error) {
	return nil, notBuilt("listExternalParties", needsLedger)
}

func (s *Server) ListTopologyProposals(ctx context.Context, req platformapi.ListTopologyProposalsRequestObject) (platformapi.ListTopologyProposalsResponseObject, error) {
	return nil, notBuilt("listTopologyProposals", needsLedger)
}

func (s *Server) LookupParticipant(ctx context.Context, req platformapi.LookupParticipantRequestObject) (platformapi.LookupParticipantResponseObject, error) {
	return nil, notBuilt("lookupParticipant", needsLedger)
}
