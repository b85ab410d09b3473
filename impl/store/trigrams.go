package store

import (
	"context"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// rareTrigram is how many names the rarest trigram of a filter may have for
// the trigram path to beat a scan of the name index: reading a candidate
// and checking it costs about as much as scanning twenty names. (A variable
// only so that the tests can force both paths.)
var rareTrigram int64 = 4096

// validatorNameFilter filters validators by a literal name substring and a
// phase. On PostgreSQL the substring test is LIKE, which the trigram index
// (pg_trgm) serves when it exists. On SQLite, a substring of three
// characters or more whose rarest trigram (validator_trigrams, migration
// 0003) has at most rareTrigram names reads only those names, each checked
// with instr; otherwise the name index is scanned.
func (s *Store) validatorNameFilter(ctx context.Context, sub string, phase domain.Phase) (func(*gorm.DB) *gorm.DB, error) {
	scan := s.nameAndPhase(sub, phase)
	if s.dialect != "sqlite" {
		return scan, nil
	}
	tris := trigrams(sub, 16)
	if len(tris) == 0 || !utf8.ValidString(sub) {
		return scan, nil
	}
	// One statement: each trigram's number of names, counted no further
	// than rareTrigram+1; the rarest first.
	parts := make([]string, len(tris))
	args := make([]any, 0, 2*len(tris)+1)
	for i, t := range tris {
		parts[i] = "SELECT ? AS tri, (SELECT COUNT(*) FROM (SELECT 1 FROM validator_trigrams WHERE tri = ? LIMIT ?)) AS n"
		args = append(args, t, t, rareTrigram+1)
	}
	var rarest struct {
		Tri string
		N   int64
	}
	err := s.reads.WithContext(ctx).Raw(strings.Join(parts, " UNION ALL ")+" ORDER BY n LIMIT 1", args...).Scan(&rarest).Error
	if err != nil || rarest.N > rareTrigram {
		return scan, err
	}
	return func(tx *gorm.DB) *gorm.DB {
		tx = scan(tx)
		return tx.Where("name IN (SELECT name FROM validator_trigrams WHERE tri = ?)", rarest.Tri)
	}, nil
}

// trigrams lists the distinct three-character substrings of s, at most max,
// in characters as SQLite's substr counts them.
func trigrams(s string, max int) []string {
	r := []rune(s)
	seen := map[string]bool{}
	var out []string
	for i := 0; i+3 <= len(r) && len(out) < max; i++ {
		t := string(r[i : i+3])
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
