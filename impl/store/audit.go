package store

import (
	"context"
	"encoding/json"
	"time"

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
}

func (auditRow) TableName() string { return "audit_log" }

// RecordAudit appends an entry to the audit log; a zero At means now.
func (s *Store) RecordAudit(ctx context.Context, e domain.AuditEntry) error {
	targets := []byte("{}")
	if len(e.Targets) > 0 {
		var err error
		if targets, err = json.Marshal(e.Targets); err != nil {
			return err
		}
	}
	row := auditRow{
		At: now(), Subject: e.Subject, Operation: e.Operation, Validator: e.Validator,
		Targets: string(targets), Status: e.Status, RequestID: e.RequestID,
	}
	if !e.At.IsZero() {
		row.At = stamp(e.At)
	}
	return translate(s.db.WithContext(ctx).Create(&row).Error, "audit entry", "")
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
			Status: r.Status, RequestID: r.RequestID,
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
