package store

import (
	"context"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// GetPruneSchedule reads a validator's pruning schedule; domain.ErrNotFound
// when it has none.
func (s *Store) GetPruneSchedule(ctx context.Context, validator string) (domain.PruneSchedule, error) {
	return take[pruneRow](s.db.WithContext(ctx), pruneWhat(validator), "validator = ?", validator)
}

// CreatePruneSchedule inserts a schedule: domain.ErrConflict when the
// validator has one, domain.ErrNotFound when the validator does not exist.
func (s *Store) CreatePruneSchedule(ctx context.Context, p *domain.PruneSchedule) error {
	row := pruneFrom(p)
	row.CreatedAt = now()
	row.UpdatedAt = row.CreatedAt
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return translate(err, pruneWhat(p.Validator), p.Validator)
	}
	p.CreatedAt, p.UpdatedAt = row.CreatedAt, row.UpdatedAt
	return nil
}

// UpdatePruneSchedule replaces cron, durations and texts of an existing
// schedule and reads the stored row back into p.
func (s *Store) UpdatePruneSchedule(ctx context.Context, p *domain.PruneSchedule) error {
	row := pruneFrom(p)
	row.UpdatedAt = now()
	return update(s.db.WithContext(ctx), &row, p, pruneWhat(p.Validator),
		"cron", "max_duration_seconds", "retention_seconds", "max_duration_text", "retention_text", "updated_at")
}

// DeletePruneSchedule removes a validator's schedule; an absent schedule is
// not an error (whether the validator exists is the caller's question).
func (s *Store) DeletePruneSchedule(ctx context.Context, validator string) error {
	err := s.db.WithContext(ctx).Delete(&pruneRow{}, "validator = ?", validator).Error
	return translate(err, pruneWhat(validator), "")
}
