package store

import (
	"context"

	"gorm.io/gorm/clause"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// GetBackupSchedule reads a validator's backup schedule, soft-deleted or not.
func (s *Store) GetBackupSchedule(ctx context.Context, validator string) (domain.BackupSchedule, error) {
	return take[backupRow](s.db.WithContext(ctx).Unscoped(), backupWhat(validator), "validator = ?", validator)
}

// SaveBackupSchedule creates the schedule, or replaces cron and maxBackups of
// the existing one and clears its deleted_at, and reads the stored row into b.
func (s *Store) SaveBackupSchedule(ctx context.Context, b *domain.BackupSchedule) error {
	_, err := s.upsertBackup(ctx, b, nil)
	return err
}

// CreateBackupSchedule is SaveBackupSchedule that updates only a soft-deleted
// record: of concurrent creates exactly one writes, and a create over an
// active schedule is domain.ErrConflict, the record unchanged.
func (s *Store) CreateBackupSchedule(ctx context.Context, b *domain.BackupSchedule) error {
	wrote, err := s.upsertBackup(ctx, b, clause.Expr{SQL: "backup_schedules.deleted_at IS NOT NULL"})
	if err == nil && !wrote {
		return domain.Conflict("validator %q already has an active backup schedule; change it with PUT", b.Validator)
	}
	return err
}

// upsertBackup is one INSERT … ON CONFLICT DO UPDATE where the existing
// record meets only (nil: always), so concurrent saves cannot both insert; it
// tells whether it wrote.
func (s *Store) upsertBackup(ctx context.Context, b *domain.BackupSchedule, only clause.Expression) (bool, error) {
	t := now()
	row := backupRow{Validator: b.Validator, Cron: b.Cron, MaxBackups: b.MaxBackups, CreatedAt: t, UpdatedAt: t}
	conflict := clause.OnConflict{
		Columns:   []clause.Column{{Name: "validator"}},
		DoUpdates: clause.AssignmentColumns([]string{"cron", "max_backups", "updated_at", "deleted_at"}),
	}
	if only != nil {
		conflict.Where = clause.Where{Exprs: []clause.Expression{only}}
	}
	res := s.db.WithContext(ctx).Clauses(conflict, clause.Returning{}).Create(&row)
	if res.Error != nil {
		return false, translate(res.Error, backupWhat(b.Validator), b.Validator)
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	*b = row.domain()
	return true, nil
}

// SoftDeleteBackupSchedule marks the active schedule deleted, keeping its
// record; domain.ErrNotFound when there is no active schedule.
func (s *Store) SoftDeleteBackupSchedule(ctx context.Context, validator string) error {
	t := now()
	// Model with gorm.DeletedAt scopes the update to deleted_at IS NULL.
	res := s.db.WithContext(ctx).Model(&backupRow{}).Where("validator = ?", validator).
		Updates(map[string]any{"deleted_at": t, "updated_at": t})
	return affected(res, backupWhat(validator))
}
