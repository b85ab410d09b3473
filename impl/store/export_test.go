package store

import (
	"context"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// DB lets the behaviour tests read rows back with their own SQL.
func (s *Store) DB() *gorm.DB { return s.db }

// ListVersion is list_generation's generation (ListPage answers it with
// its page): it moves whenever a page of validators would change (an
// insert, a delete, a change of a listed column: migration 0022's
// triggers).
func (s *Store) ListVersion(ctx context.Context) (int64, error) {
	gen, _, err := s.generation(ctx)
	return gen, translate(err, "list validators", "")
}

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect }

// MigrationVersions lists the embedded migrations of a dialect.
func MigrationVersions(dialect string) ([]int64, error) {
	ms, err := migrations(dialect)
	var out []int64
	for _, m := range ms {
		out = append(out, m.version)
	}
	return out, err
}

// MigrateTo brings a database's schema up to version only, then runs
// stmts: a test writes rows as an older server did before a later
// migration runs.
func MigrateTo(driver, dsn string, version int64, stmts ...string) error {
	d, err := dialectorOf(driver, dsn)
	if err != nil {
		return err
	}
	db, err := openGorm(d)
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	if err := migrate(context.Background(), db, driver, version); err != nil {
		return err
	}
	for _, stmt := range stmts {
		if err := db.Exec(stmt).Error; err != nil {
			return err
		}
	}
	return nil
}

// CreateValidator is RecordCreate without a pruning schedule.
func (s *Store) CreateValidator(ctx context.Context, v *domain.Validator) error {
	return s.RecordCreate(ctx, v, nil)
}

// DeleteBackupSchedule removes the record for good (soft-deleted or not);
// absent is no error.
func (s *Store) DeleteBackupSchedule(ctx context.Context, validator string) error {
	err := s.db.WithContext(ctx).Unscoped().Where("validator = ?", validator).Delete(&backupRow{}).Error
	return translate(err, backupWhat(validator), "")
}

// ListValidators is ListPage without the generation.
func (s *Store) ListValidators(ctx context.Context, f domain.ValidatorFilter) ([]domain.ListedValidator, int64, error) {
	out, total, _, err := s.ListPage(ctx, f)
	return out, total, err
}

// ListAudit returns the latest audit entries, newest first; validator
// filters when not empty.
func (s *Store) ListAudit(ctx context.Context, validator string, limit int) ([]domain.AuditEntry, error) {
	return s.FindAudit(ctx, domain.AuditFilter{Validator: validator, Page: domain.Page{Limit: limit}})
}
