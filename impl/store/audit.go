package store

import (
	"context"
	"encoding/json"
	"time"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// auditRow is one audit_log row.
type auditRow struct {
	ID        int64 `gorm:"primaryKey"`
	At        time.Time
	Subject   string
	Operation string
	Validator string
	Targets   string // JSON object of path parameter name to value
	Status    int
	RequestID string
	Outcome   string
}

func (auditRow) TableName() string { return "audit_log" }

// RecordAudit appends a finished entry to the audit log; a zero At means
// now, an empty Outcome means done.
func (s *Store) RecordAudit(ctx context.Context, e domain.AuditEntry) error {
	if e.Outcome == "" {
		e.Outcome = domain.AuditDone
	}
	_, err := s.insertAudit(ctx, e)
	return err
}

// BeginAudit writes the entry of an operation about to be attempted
// (outcome pending, status 0) and returns its id for CompleteAudit. The
// caller attempts the operation only when this returns no error.
func (s *Store) BeginAudit(ctx context.Context, e domain.AuditEntry) (int64, error) {
	e.Outcome, e.Status = domain.AuditPending, 0
	return s.insertAudit(ctx, e)
}

// CompleteAudit records the answer of the operation BeginAudit announced.
// It also completes an entry that a restart marked unknown meanwhile
// (another server sharing the database started while the call ran).
func (s *Store) CompleteAudit(ctx context.Context, id int64, status int) error {
	res := s.db.WithContext(ctx).Model(&auditRow{}).Where("id = ?", id).
		Updates(map[string]any{"status": status, "outcome": domain.AuditDone})
	if err := translate(res.Error, "audit entry", ""); err != nil {
		return err
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("audit entry %d not found", id)
	}
	return nil
}

// markUnknownAudit marks the entries left pending by a server that stopped
// between BeginAudit and CompleteAudit: their operation may or may not have
// reached the upstream.
func markUnknownAudit(ctx context.Context, db *gorm.DB) (int64, error) {
	res := db.WithContext(ctx).Model(&auditRow{}).Where("outcome = ?", domain.AuditPending).
		Update("outcome", domain.AuditUnknown)
	return res.RowsAffected, translate(res.Error, "audit log", "")
}

func (s *Store) insertAudit(ctx context.Context, e domain.AuditEntry) (int64, error) {
	targets := []byte("{}")
	if len(e.Targets) > 0 {
		var err error
		if targets, err = json.Marshal(e.Targets); err != nil {
			return 0, err
		}
	}
	row := auditRow{
		At: now(), Subject: e.Subject, Operation: e.Operation, Validator: e.Validator,
		Targets: string(targets), Status: e.Status, RequestID: e.RequestID, Outcome: e.Outcome,
	}
	if !e.At.IsZero() {
		row.At = stamp(e.At)
	}
	if err := translate(s.db.WithContext(ctx).Create(&row).Error, "audit entry", ""); err != nil {
		return 0, err
	}
	return row.ID, nil
}

// ListAudit returns the latest audit entries, newest first; validator
// filters when not empty.
func (s *Store) ListAudit(ctx context.Context, validator string, limit int) ([]domain.AuditEntry, error) {
	if limit <= 0 {
		return nil, domain.Invalid("limit", "must be positive, got %d", limit)
	}
	q := s.db.WithContext(ctx)
	if validator != "" {
		q = q.Where("validator = ?", validator)
	}
	var rows []auditRow
	if err := q.Order("at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, translate(err, "audit log", "")
	}
	out := make([]domain.AuditEntry, len(rows))
	for i, r := range rows {
		e := domain.AuditEntry{
			At: r.At.UTC(), Subject: r.Subject, Operation: r.Operation, Validator: r.Validator,
			Status: r.Status, RequestID: r.RequestID, Outcome: r.Outcome,
		}
		if r.Targets != "" && r.Targets != "{}" {
			if err := json.Unmarshal([]byte(r.Targets), &e.Targets); err != nil {
				return nil, err
			}
		}
		out[i] = e
	}
	return out, nil
}
