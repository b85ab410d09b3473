package store

import (
	"context"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func checkPage(p domain.Page) error {
	if p.Limit <= 0 {
		return domain.Invalid("limit", "must be positive, got %d", p.Limit)
	}
	if p.Offset < 0 {
		return domain.Invalid("from", "must not be negative, got %d", p.Offset)
	}
	return nil
}

// contains is a literal, case-sensitive substring test of column against the
// one argument. instr/strpos compare characters exactly on both databases:
// no LIKE wildcards to escape, and no reliance on SQLite's case-insensitive
// LIKE or its deprecated case_sensitive_like pragma.
func (s *Store) contains(column string) string {
	if s.dialect == "postgres" {
		return "strpos(" + column + ", ?) > 0"
	}
	return "instr(" + column + ", ?) > 0"
}

// nameAndPhase filters by a literal name substring and a phase; empty
// values filter nothing.
func (s *Store) nameAndPhase(name string, phase domain.Phase) func(*gorm.DB) *gorm.DB {
	return func(tx *gorm.DB) *gorm.DB {
		if name != "" {
			tx = tx.Where(s.contains("name"), name)
		}
		if phase != "" {
			tx = tx.Where("phase = ?", string(phase))
		}
		return tx
	}
}

// page reads one page of R's table, ordered by name, given the size of the
// filtered set. It never reads more rows than the page: the name at position
// Offset is found by walking the name index (index-only, nothing decoded)
// from the nearer end, so the walk is at most half the filtered set, and the
// page is then a range read of Limit rows from that name. Total comes from
// the caller (a maintained counter, or a count over an index).
//
// Under concurrent writes a page may shift by the rows written between the
// count and the page, as any offset page does.
func page[R any](ctx context.Context, db *gorm.DB, filter func(*gorm.DB) *gorm.DB, p domain.Page, total int64) ([]R, error) {
	out := []R{}
	offset := int64(p.Offset)
	if offset >= total {
		return out, nil
	}
	start := db.Model(new(R)).Scopes(filter).Select("name").Limit(1)
	if offset <= total/2 {
		start = start.Order("name").Offset(p.Offset)
	} else {
		start = start.Order("name DESC").Offset(int(total - 1 - offset))
	}
	err := db.WithContext(ctx).Model(new(R)).Scopes(filter).
		Where("name >= (?)", start).
		// No more than the rows left: a scan stops at the last one.
		Order("name").Limit(int(min(int64(p.Limit), total-offset))).
		Find(&out).Error
	return out, err
}

// count is the size of R's filtered set, counted by the database (the
// planner counts over the smallest index that holds the filtered columns).
func count[R any](ctx context.Context, db *gorm.DB, filter func(*gorm.DB) *gorm.DB) (int64, error) {
	var n int64
	err := db.WithContext(ctx).Model(new(R)).Scopes(filter).Count(&n).Error
	return n, err
}
