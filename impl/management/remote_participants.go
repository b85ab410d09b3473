package management

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func (s *Server) ListRemoteParticipants(ctx context.Context, req managementapi.ListRemoteParticipantsRequestObject) (managementapi.ListRemoteParticipantsResponseObject, error) {
	f := domain.RemoteParticipantFilter{Page: page(req.Params.From, req.Params.Limit), Healthy: req.Params.HealthStatus,
		NameContains: ptr.Deref(req.Params.Name, ""), Phase: domain.Phase(ptr.Deref(req.Params.Status, ""))}
	rows, total, err := s.Store.ListRemoteParticipants(ctx, f)
	if err != nil {
		return nil, err
	}
	out := managementapi.ListRemoteParticipants200JSONResponse{Participants: make([]managementapi.RemoteParticipantDto, 0, len(rows)), TotalCount: total}
	for _, p := range rows {
		dto, err := participantResponse(p)
		if err != nil {
			return nil, err
		}
		out.Participants = append(out.Participants, dto)
	}
	return out, nil
}

func (s *Server) CreateRemoteParticipant(ctx context.Context, req managementapi.CreateRemoteParticipantRequestObject) (managementapi.CreateRemoteParticipantResponseObject, error) {
	dto, err := s.saveParticipant(ctx, *req.Body, s.Store.CreateRemoteParticipant)
	if err != nil {
		return nil, err
	}
	return managementapi.CreateRemoteParticipant201JSONResponse(dto), nil
}

func (s *Server) GetRemoteParticipant(ctx context.Context, req managementapi.GetRemoteParticipantRequestObject) (managementapi.GetRemoteParticipantResponseObject, error) {
	p, err := s.Store.GetRemoteParticipant(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	dto, err := participantResponse(p)
	if err != nil {
		return nil, err
	}
	return managementapi.GetRemoteParticipant200JSONResponse(dto), nil
}

// UpdateRemoteParticipant replaces the registration; its health record stays.
func (s *Server) UpdateRemoteParticipant(ctx context.Context, req managementapi.UpdateRemoteParticipantRequestObject) (managementapi.UpdateRemoteParticipantResponseObject, error) {
	if req.Body.Name != req.Name {
		return nil, domain.Invalid("name", "must equal the name in the path (%q); a registration is not renamed", req.Name)
	}
	dto, err := s.saveParticipant(ctx, *req.Body, s.Store.UpdateRemoteParticipant)
	if err != nil {
		return nil, err
	}
	return managementapi.UpdateRemoteParticipant200JSONResponse(dto), nil
}

// saveParticipant records the registration dto with save, which reads the
// stored row back (an update's health record included), and answers it.
func (s *Server) saveParticipant(ctx context.Context, dto managementapi.RemoteParticipantDto, save func(context.Context, *domain.RemoteParticipant) error) (managementapi.RemoteParticipantDto, error) {
	p, err := participantRow(dto)
	if err != nil {
		return dto, err
	}
	if err := save(ctx, &p); err != nil {
		return dto, err
	}
	return participantResponse(p)
}

func (s *Server) DeleteRemoteParticipant(ctx context.Context, req managementapi.DeleteRemoteParticipantRequestObject) (managementapi.DeleteRemoteParticipantResponseObject, error) {
	if err := s.Store.DeleteRemoteParticipant(ctx, req.Name); err != nil {
		return nil, err
	}
	return managementapi.DeleteRemoteParticipant204Response{}, nil
}

func participantRow(dto managementapi.RemoteParticipantDto) (domain.RemoteParticipant, error) {
	// The name is a key and the ports are dialled: checked whatever the
	// route. The outbound address policy decides only whether it is probed.
	var bad domain.Invalids
	for _, e := range []*domain.Error{domain.KeyName("name", dto.Name), domain.Host("adminAddress", dto.AdminAddress),
		domain.Port("adminPort", dto.AdminPort), domain.Port("ledgerPort", dto.LedgerPort)} {
		if e != nil {
			bad = append(bad, e)
		}
	}
	if len(bad) > 0 {
		return domain.RemoteParticipant{}, bad
	}
	phase := domain.Phase(ptr.Deref(dto.Phase, managementapi.PENDING))
	dto.Phase = nil
	dto.HealthStatus, dto.LastHealthCheck = nil, nil
	spec, err := json.Marshal(dto)
	if err != nil {
		return domain.RemoteParticipant{}, err
	}
	return domain.RemoteParticipant{
		Name:          dto.Name,
		Spec:          spec,
		Phase:         phase,
		AdminAddress:  dto.AdminAddress,
		AdminPort:     dto.AdminPort,
		LedgerAddress: dto.LedgerAddress,
		LedgerPort:    dto.LedgerPort,
	}, nil
}

func participantResponse(p domain.RemoteParticipant) (managementapi.RemoteParticipantDto, error) {
	var dto managementapi.RemoteParticipantDto
	if err := json.Unmarshal(p.Spec, &dto); err != nil {
		return dto, fmt.Errorf("remote participant %q: stored registration: %w", p.Name, err)
	}
	dto.Phase = ptr.To(managementapi.Phase(p.Phase))
	dto.HealthStatus = p.Healthy
	if p.LastCheckedAt != nil {
		dto.LastHealthCheck = ptr.To(p.LastCheckedAt.UTC())
	}
	return dto, nil
}
