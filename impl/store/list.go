package store

import (
	"context"
	"strings"

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

// contains is a literal, case-sensitive substring test of column against
// sub: the condition and its one argument. PostgreSQL's LIKE (wildcards
// escaped) is served by a trigram index; SQLite's LIKE ignores case, hence instr.
func (s *Store) contains(column, sub string) (string, string) {
	if s.dialect == "postgres" {
		// E'\\' is one backslash whatever standard_conforming_strings says.
		return column + ` LIKE ? ESCAPE E'\\'`, "%" + likeEscaper.Replace(sub) + "%"
	}
	return "instr(" + column + ", ?) > 0", sub
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// page reads one page of R's table, ordered by name, given the size of the
// filtered set: the names come from a walk of the name index from its nearer
// end (at most half the set), then the rows by primary key.
func page[R any](ctx context.Context, db *gorm.DB, filter func(*gorm.DB) *gorm.DB, p domain.Page, total int64) ([]R, error) {
	out := []R{}
	offset := int64(p.Offset)
	if offset >= total {
		return out, nil
	}
	n := min(int64(p.Limit), total-offset)
	names := db.WithContext(ctx).Model(new(R)).Scopes(filter).Select("name").Limit(int(n))
	if offset > total/2 {
		names = names.Order("name DESC").Offset(int(total - offset - n))
	} else {
		names = names.Order("name").Offset(p.Offset)
	}
	err := db.WithContext(ctx).Where("name IN (?)", names).Order("name").Find(&out).Error
	return out, err
}

// count is the size of R's filtered set. Its statements are prepared once per
// connection: preparing a count on SQLite costs as much as running it.
func count[R any](ctx context.Context, db *gorm.DB, filter func(*gorm.DB) *gorm.DB) (int64, error) {
	var n int64
	err := db.Session(&gorm.Session{PrepareStmt: true, Context: ctx}).Model(new(R)).Scopes(filter).Count(&n).Error
	return n, err
}
