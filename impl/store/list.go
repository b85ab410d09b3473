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
// sub: the condition and its one argument. SQLite compares with instr,
// exactly; PostgreSQL with LIKE and the wildcards escaped, which is the same
// test and one that the remote participants' trigram index (pg_trgm,
// migration 0003) serves; the validators' went with migration 0022, their
// list being filtered in memory (listindex.go). SQLite's LIKE is
// case-insensitive, hence instr there.
func (s *Store) contains(column, sub string) (string, string) {
	if s.dialect == "postgres" {
		// E'\\' is one backslash whatever standard_conforming_strings says.
		return column + ` LIKE ? ESCAPE E'\\'`, "%" + likeEscaper.Replace(sub) + "%"
	}
	return "instr(" + column + ", ?) > 0", sub
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// page reads one page of R's table, ordered by name, given the size of the
// filtered set. It never reads more than the page: the names come from a
// walk of the name index (index-only where an index holds the filter's
// columns) from the nearer end, so the walk is at most half the filtered
// set; the rows are then read by primary key (name IN (the names), ordered
// by name). Total comes from the caller (maintained counters, or a count
// over an index).
//
// Under concurrent writes a page may shift by the rows written between the
// count and the page, as any offset page does.
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

// count is the size of R's filtered set, counted by the database (the
// planner counts over the smallest index that holds the filtered columns).
// Its statements are prepared once per connection and kept (a few per kind,
// one per combination of filters): under 16 clients on SQLite, preparing
// the count anew took as much CPU as running it (docs/benchmarks.md).
func count[R any](ctx context.Context, db *gorm.DB, filter func(*gorm.DB) *gorm.DB) (int64, error) {
	var n int64
	err := db.Session(&gorm.Session{PrepareStmt: true, Context: ctx}).Model(new(R)).Scopes(filter).Count(&n).Error
	return n, err
}
