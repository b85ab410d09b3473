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

// listed is a row of a page with the size of the whole filtered set.
type listed[R any] struct {
	Row   R `gorm:"embedded"`
	Total int64
}

// page reads one page of R's table, ordered by name, and the size of the
// filtered set. The size comes with the page from a window function (one
// statement, so it agrees with the page); only a page past the end, which
// has no row to carry it, costs a second COUNT.
func page[R any](ctx context.Context, db *gorm.DB, filter func(*gorm.DB) *gorm.DB, p domain.Page) ([]R, int64, error) {
	var rows []listed[R]
	err := db.WithContext(ctx).Model(new(R)).Scopes(filter).
		Select("*, COUNT(*) OVER () AS total").
		Order("name").Limit(p.Limit).Offset(p.Offset).
		Find(&rows).Error
	if err != nil {
		return nil, 0, err
	}
	out := make([]R, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	if len(rows) > 0 {
		return out, rows[0].Total, nil
	}
	var total int64
	err = db.WithContext(ctx).Model(new(R)).Scopes(filter).Count(&total).Error
	return out, total, err
}
