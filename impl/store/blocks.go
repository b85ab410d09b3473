package store

import (
	"context"
	"sort"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Block sizes of validator_blocks (migration 0003): a rebuild cuts blocks
// of blockSize names; a block that grows past blockMax is split in two.
// A page walks at most blockMax index entries; the block counts it locates
// its block with (n/blockSize rows per phase) are read again only when
// they changed (blockCounts).
// (Variables only so that the tests can cut small blocks.)
var (
	blockSize int64 = 1000
	blockMax        = 2 * blockSize
)

// rebuildBlocks is migration 0003's statement that cuts the blocks afresh
// (argument: blockSize).
const rebuildBlocks = `INSERT INTO validator_blocks (lo, phase, n)
WITH r AS (SELECT name, phase, (ROW_NUMBER() OVER (ORDER BY name) - 1) / ? AS b FROM validators WHERE NOT creating),
     l AS (SELECT b, CASE WHEN b = 0 THEN '' ELSE MIN(name) END AS lo FROM r GROUP BY b)
SELECT l.lo, r.phase, COUNT(*) FROM r JOIN l ON l.b = r.b GROUP BY l.lo, r.phase`

// locate finds, from the block counts alone, the block that holds position
// offset of the validators (of one phase, or of all): its lo, the number
// of validators before it, and the total. lo is nil when offset is past
// the end. The counts come from memory (blockCounts) while the generation
// of validator_blocks has not moved.
func (s *Store) locate(ctx context.Context, phase domain.Phase, offset int64) (lo *string, before, total int64, err error) {
	c, err := s.blockCounts(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	spans := c.all
	if phase != "" {
		spans = c.phases[phase]
	}
	if len(spans) == 0 {
		return nil, 0, 0, nil
	}
	total = spans[len(spans)-1].upto
	i := sort.Search(len(spans), func(i int) bool { return spans[i].upto > offset })
	if i == len(spans) {
		return nil, 0, total, nil
	}
	return &spans[i].lo, spans[i].before, total, nil
}

// blockCounts are the counts of validator_blocks as of generation gen: for
// all phases and per phase, each block in lo order with the running sums.
type blockCounts struct {
	gen    int64
	all    []blockSpan
	phases map[domain.Phase][]blockSpan
}

type blockSpan struct {
	lo     string
	before int64 // validators in the blocks before this one
	upto   int64 // before, plus this block's
}

// ListVersion is list_generation: it moves whenever a page of validators
// would change (an insert, a removal, a phase, a finished create, an edit of
// what an item shows; migrations 0007 and 0024), so that release 1.11's list
// answers an ETag without reading the page. Read it before the page.
func (s *Store) ListVersion(ctx context.Context) (int64, error) {
	gen, err := s.listGeneration(s.bounded(ctx))
	return gen, translate(err, "list validators", "")
}

func (s *Store) listGeneration(ctx context.Context) (int64, error) {
	var gen int64
	if err := s.queryRow(ctx, "SELECT g FROM list_generation", nil, &gen); err != nil {
		return 0, err
	}
	return gen, nil
}

// blockCounts returns the block counts of the current generation: from
// memory when list_generation has not moved since they were read, else read
// again (the generation first, so counts read later are at least as new).
func (s *Store) blockCounts(ctx context.Context) (*blockCounts, error) {
	gen, err := s.listGeneration(ctx)
	if err != nil {
		return nil, err
	}
	if c := s.blocks.Load(); c != nil && c.gen == gen {
		return c, nil
	}
	rows, err := s.query(ctx, "SELECT lo, phase, n FROM validator_blocks ORDER BY lo, phase")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c := &blockCounts{gen: gen, phases: map[domain.Phase][]blockSpan{}}
	add := func(spans []blockSpan, lo string, n int64) []blockSpan {
		if k := len(spans); k > 0 && spans[k-1].lo == lo {
			spans[k-1].upto += n
			return spans
		}
		var before int64
		if k := len(spans); k > 0 {
			before = spans[k-1].upto
		}
		return append(spans, blockSpan{lo: lo, before: before, upto: before + n})
	}
	for rows.Next() {
		var lo string
		var phase domain.Phase
		var n int64
		if err := rows.Scan(&lo, &phase, &n); err != nil {
			return nil, err
		}
		c.all = add(c.all, lo, n)
		c.phases[phase] = add(c.phases[phase], lo, n)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.blocks.Store(c)
	return c, nil
}

// pageByBlocks reads a page of validators filtered at most by phase: the
// block counts locate the offset, and the page walks only inside its block
// (the names from the block's lo, then their rows by primary key; one
// statement).
func (s *Store) pageByBlocks(ctx context.Context, f domain.ValidatorFilter) ([]domain.ListedValidator, int64, error) {
	lo, before, total, err := s.locate(ctx, f.Phase, int64(f.Offset))
	if err != nil || lo == nil {
		return []domain.ListedValidator{}, total, err
	}
	// As pageNames: walk from the nearer end of what follows lo.
	offset, rest := int64(f.Offset)-before, total-before
	n := min(int64(f.Limit), rest-offset)
	order := "name"
	if offset > rest/2 {
		order, offset = "name DESC", rest-offset-n
	}
	where, args := "name >= ?", []any{*lo}
	if f.Phase != "" {
		where, args = where+" AND phase = ?", append(args, string(f.Phase))
	}
	rows, err := s.query(ctx, `SELECT `+listedColumns+` FROM validators WHERE name IN (
	SELECT name FROM validators WHERE `+where+` AND NOT creating ORDER BY `+order+` LIMIT ? OFFSET ?)
ORDER BY name`, append(args, n, offset)...)
	if err != nil {
		return nil, 0, err
	}
	out, err := scanListed(rows)
	return out, total, err
}

// splitBlock splits the block holding name when it has grown past
// blockMax. On PostgreSQL the split holds off the validators' writers (a
// SHARE ROW EXCLUSIVE lock; readers go on) so that no trigger counts a row
// into the block being cut; on SQLite the transaction's write lock does.
func (s *Store) splitBlock(ctx context.Context, name string) error {
	var size int64
	err := s.db.WithContext(ctx).Table("validator_blocks").Select("COALESCE(SUM(n), 0)").
		Where("lo = (SELECT MAX(lo) FROM validator_blocks WHERE lo <= ?)", name).Scan(&size).Error
	if err != nil || size <= blockMax {
		return err
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect == "postgres" {
			if err := tx.Exec("LOCK TABLE validators IN SHARE ROW EXCLUSIVE MODE").Error; err != nil {
				return err
			}
		}
		var lo string
		if err := tx.Raw("SELECT COALESCE(MAX(lo), '') FROM validator_blocks WHERE lo <= ?", name).Scan(&lo).Error; err != nil {
			return err
		}
		var hi *string
		if err := tx.Raw("SELECT MIN(lo) FROM validator_blocks WHERE lo > ?", lo).Scan(&hi).Error; err != nil {
			return err
		}
		in := func(tx *gorm.DB) *gorm.DB {
			tx = tx.Table("validators").Where("name >= ? AND NOT creating", lo)
			if hi != nil {
				tx = tx.Where("name < ?", *hi)
			}
			return tx
		}
		var n int64
		if err := tx.Scopes(in).Count(&n).Error; err != nil {
			return err
		}
		if n <= blockMax {
			return nil // another server split it first
		}
		var mid string
		if err := tx.Scopes(in).Select("name").Order("name").Offset(int(n / 2)).Limit(1).Scan(&mid).Error; err != nil {
			return err
		}
		if err := tx.Exec("DELETE FROM validator_blocks WHERE lo = ?", lo).Error; err != nil {
			return err
		}
		for _, half := range []struct {
			lo   string
			cond string
			arg  string
		}{{lo, "name < ?", mid}, {mid, "name >= ?", mid}} {
			err := tx.Exec(`INSERT INTO validator_blocks (lo, phase, n) `+
				`SELECT ?, phase, COUNT(*) FROM (?) AS v GROUP BY phase`,
				half.lo, tx.Scopes(in).Select("phase").Where(half.cond, half.arg)).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ImportValidators inserts validators in one transaction and cuts the
// blocks afresh: the bulk path for seeding (benchmarks) and imports. Rows
// are stored as given, timestamps included.
func (s *Store) ImportValidators(ctx context.Context, vs []domain.Validator) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// As in splitBlock: no other writer's trigger may count into the
		// blocks while they are cut afresh.
		if s.dialect == "postgres" {
			if err := tx.Exec("LOCK TABLE validators IN SHARE ROW EXCLUSIVE MODE").Error; err != nil {
				return err
			}
		}
		rows := make([]validatorRow, len(vs))
		for i := range vs {
			rows[i] = validatorFrom(&vs[i])
			rows[i].CreatedAt, rows[i].UpdatedAt = stamp(rows[i].CreatedAt), stamp(rows[i].UpdatedAt)
		}
		if err := tx.CreateInBatches(rows, 500).Error; err != nil {
			return err
		}
		if err := tx.Exec("DELETE FROM validator_blocks").Error; err != nil {
			return err
		}
		return tx.Exec(rebuildBlocks, blockSize).Error
	})
	return translate(err, "import validators", "")
}
