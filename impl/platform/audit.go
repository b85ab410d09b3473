package platform

import (
	"context"
	"strconv"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// defaultAuditLimit is listAuditEntries' page when limit is absent.
const defaultAuditLimit = 100

func (s *Server) ListAuditEntries(ctx context.Context, req platformapi.ListAuditEntriesRequestObject) (platformapi.ListAuditEntriesResponseObject, error) {
	if s.Audit == nil {
		return nil, notWired("listAuditEntries", "the audit log (database)")
	}
	q := req.Params
	page := domain.Page{Limit: int(ptr.Deref(q.Limit, defaultAuditLimit))}
	f := domain.NewAuditFilter(q.Validator, q.Subject, q.Since, q.Until, page)
	if q.Cursor != nil {
		before, err := strconv.ParseInt(*q.Cursor, 10, 64)
		if err != nil || before <= 0 {
			return nil, domain.Invalid("cursor", "is not a cursor this server gave")
		}
		f.Before = before
	}
	// One more than asked tells whether a next page exists.
	f.Limit++
	rows, err := s.Audit.FindAudit(ctx, f)
	if err != nil {
		return nil, err
	}
	out := platformapi.ListAuditEntries200JSONResponse{Entries: make([]platformapi.AuditEntry, 0, len(rows))}
	if len(rows) == f.Limit {
		rows = rows[:len(rows)-1]
		out.NextCursor = ptr.To(strconv.FormatInt(rows[len(rows)-1].ID, 10))
	}
	for _, e := range rows {
		dto := platformapi.AuditEntry{
			Id: e.ID, At: e.At.UTC(), Subject: e.Subject, Operation: e.Operation,
			Outcome: platformapi.AuditOutcome(e.Outcome), Status: int32(e.Status), RequestId: e.RequestID,
			Role: (*platformapi.Role)(domain.NonZero(e.Role)), Validator: domain.NonZero(e.Validator),
		}
		if len(e.Targets) > 0 {
			dto.Targets = &e.Targets
		}
		out.Entries = append(out.Entries, dto)
	}
	return out, nil
}
