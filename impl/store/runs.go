package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func runWhat(id int64) string { return fmt.Sprintf("run %d", id) }

// RecordRun stores the start of a backup or pruning run and sets r.ID;
// a zero StartedAt means now.
func (s *Store) RecordRun(ctx context.Context, r *domain.Run) error {
	if r.Kind != domain.RunBackup && r.Kind != domain.RunPrune {
		return domain.Invalid("kind", "must be %q or %q, got %q", domain.RunBackup, domain.RunPrune, r.Kind)
	}
	row := runRow{Validator: r.Validator, Kind: string(r.Kind), StartedAt: now(), Succeeded: r.Succeeded, Message: r.Message}
	if !r.StartedAt.IsZero() {
		row.StartedAt = stamp(r.StartedAt)
	}
	if r.FinishedAt != nil {
		at := stamp(*r.FinishedAt)
		row.FinishedAt = &at
	}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return translate(err, fmt.Sprintf("%s run of validator %q", r.Kind, r.Validator), r.Validator)
	}
	*r = row.domain()
	return nil
}

// FinishRun records the outcome of a started run: domain.ErrNotFound for an
// unknown id, domain.ErrConflict when the run is already finished.
func (s *Store) FinishRun(ctx context.Context, id int64, succeeded bool, message string, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&runRow{}).Where("id = ? AND finished_at IS NULL", id).
		UpdateColumns(map[string]any{"finished_at": stamp(at), "succeeded": succeeded, "message": message})
	if res.Error != nil {
		return translate(res.Error, runWhat(id), "")
	}
	if res.RowsAffected > 0 {
		return nil
	}
	var n int64
	if err := s.db.WithContext(ctx).Model(&runRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return translate(err, runWhat(id), "")
	}
	if n == 0 {
		return translate(gorm.ErrRecordNotFound, runWhat(id), "")
	}
	return domain.Conflict("%s is already finished", runWhat(id))
}

// ListRuns returns a validator's latest runs of one kind (every kind when
// kind is empty), newest first.
func (s *Store) ListRuns(ctx context.Context, validator string, kind domain.RunKind, limit int) ([]domain.Run, error) {
	if limit <= 0 {
		return nil, domain.Invalid("limit", "must be positive, got %d", limit)
	}
	q := s.db.WithContext(ctx).Where("validator = ?", validator)
	if kind != "" {
		q = q.Where("kind = ?", string(kind))
	}
	var rows []runRow
	if err := q.Order("started_at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, translate(err, fmt.Sprintf("runs of validator %q", validator), "")
	}
	out := make([]domain.Run, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}
