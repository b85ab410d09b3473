package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// auditRow is one audit_log row.
type auditRow struct {
	ID        int64 `gorm:"primaryKey"`
	At        time.Time
	Subject   string
	Role      string
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

// CompleteAudit records the answer of the operation BeginAudit announced, and
// the validator when not empty. An entry a restart marked unknown meanwhile is
// completed too; a done entry is never changed (the log is append-only).
func (s *Store) CompleteAudit(ctx context.Context, id int64, status int, validator string) error {
	set := map[string]any{"status": status, "outcome": domain.AuditDone}
	if validator != "" {
		set["validator"] = auditText(validator)
	}
	res := s.db.WithContext(ctx).Model(&auditRow{}).Where("id = ? AND outcome <> ?", id, domain.AuditDone).Updates(set)
	if err := translate(res.Error, "audit entry", ""); err != nil {
		return err
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("audit entry %d not found or already complete", id)
	}
	return nil
}

// auditText is what a caller sent as a column can hold it: invalid UTF-8, NUL
// (PostgreSQL's text refuses both) or a value too long for an index entry must
// not fail the audit of a call that is answered 400 after it.
func auditText(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= maxAuditText {
		return s
	}
	cut := maxAuditText
	for !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// maxAuditText bounds a caller's text in the audit log, far below
// PostgreSQL's limit on an index entry (about 2.7 KB).
const maxAuditText = 1024

// PurgeAudit deletes the entries older than before (the retention), the one
// deletion the audit log knows, and returns how many it deleted.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where("at < ?", stamp(before)).Delete(&auditRow{})
	return res.RowsAffected, translate(res.Error, "audit log", "")
}

// markUnknownAudit marks the entries left pending by a server that stopped
// between BeginAudit and CompleteAudit: their operation may or may not have
// reached the upstream.
func markUnknownAudit(ctx context.Context, db *gorm.DB) error {
	err := db.WithContext(ctx).Model(&auditRow{}).Where("outcome = ?", domain.AuditPending).
		Update("outcome", domain.AuditUnknown).Error
	return translate(err, "audit log", "")
}

func (s *Store) insertAudit(ctx context.Context, e domain.AuditEntry) (int64, error) {
	targets := []byte("{}")
	if len(e.Targets) > 0 {
		targets, _ = json.Marshal(e.Targets) // a map of strings always encodes
	}
	row := auditRow{
		At: now(), Subject: auditText(e.Subject), Role: e.Role, Operation: e.Operation, Validator: auditText(e.Validator),
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

// FindAudit returns one page of the entries f selects, newest (highest id)
// first.
func (s *Store) FindAudit(ctx context.Context, f domain.AuditFilter) ([]domain.AuditEntry, error) {
	if err := checkPage(f.Page); err != nil {
		return nil, err
	}
	var rows []auditRow
	err := s.db.WithContext(ctx).Scopes(auditFilter(f)).Order("id DESC").Offset(f.Offset).Limit(f.Limit).Find(&rows).Error
	if err != nil {
		return nil, translate(err, "audit log", "")
	}
	out := make([]domain.AuditEntry, len(rows))
	for i, r := range rows {
		e := domain.AuditEntry{
			ID: r.ID, At: r.At.UTC(), Subject: r.Subject, Role: r.Role, Operation: r.Operation, Validator: r.Validator,
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

// CountAudit returns how many entries f selects (its page aside).
func (s *Store) CountAudit(ctx context.Context, f domain.AuditFilter) (int64, error) {
	n, err := count[auditRow](ctx, s.db, auditFilter(f))
	return n, translate(err, "audit log", "")
}

func auditFilter(f domain.AuditFilter) func(*gorm.DB) *gorm.DB {
	return func(tx *gorm.DB) *gorm.DB {
		if f.Validator != "" {
			tx = tx.Where("validator = ?", f.Validator)
		}
		if f.Subject != "" {
			tx = tx.Where("subject = ?", f.Subject)
		}
		if !f.Since.IsZero() {
			tx = tx.Where("at >= ?", stamp(f.Since))
		}
		if !f.Until.IsZero() {
			tx = tx.Where("at < ?", stamp(f.Until))
		}
		if f.Before > 0 {
			tx = tx.Where("id < ?", f.Before)
		}
		return tx
	}
}
