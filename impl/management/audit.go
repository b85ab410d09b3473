package management

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func (s *Server) ListAuditEntries(ctx context.Context, req managementapi.ListAuditEntriesRequestObject) (managementapi.ListAuditEntriesResponseObject, error) {
	q := req.Params
	f := domain.NewAuditFilter(q.Validator, q.Subject, q.Since, q.Until, page(q.From, q.Limit))
	total, err := s.Store.CountAudit(ctx, f)
	if err != nil {
		return nil, err
	}
	rows, err := s.Store.FindAudit(ctx, f)
	if err != nil {
		return nil, err
	}
	out := managementapi.ListAuditEntries200JSONResponse{Entries: make([]managementapi.AuditEntryDto, 0, len(rows)), TotalCount: total}
	for _, e := range rows {
		dto := managementapi.AuditEntryDto{
			Id: e.ID, At: e.At.UTC(), Subject: e.Subject, Operation: e.Operation,
			Outcome: managementapi.AuditOutcome(e.Outcome), Status: int32(e.Status), RequestId: e.RequestID,
			Role: (*managementapi.Role)(domain.NonZero(e.Role)), Validator: domain.NonZero(e.Validator),
		}
		if len(e.Targets) > 0 {
			dto.Targets = &e.Targets
		}
		out.Entries = append(out.Entries, dto)
	}
	return out, nil
}
