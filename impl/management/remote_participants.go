package management

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/management"
)

func (s *Server) ListRemoteParticipants(ctx context.Context, req management.ListRemoteParticipantsRequestObject) (management.ListRemoteParticipantsResponseObject, error) {
	return nil, notBuilt("listRemoteParticipants")
}

func (s *Server) CreateRemoteParticipant(ctx context.Context, req management.CreateRemoteParticipantRequestObject) (management.CreateRemoteParticipantResponseObject, error) {
	return nil, notBuilt("createRemoteParticipant")
}
