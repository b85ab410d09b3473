package store

import (
	"context"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Block sizes of validator_blocks (migration 0003): a rebuild cuts blocks
// of blockSize names; a block that grows past blockMax is split in two.
// A page reads n/blockSize block rows per phase and walks at most blockMax
// index entries.
// (Variables only so that the tests can cut small blocks.)
var (
	blockSize int64 = 1000
	blockMax        = 2 * blockSize
)

// rebuildBlocks is migration 0003's statement that cuts the blocks afresh
// (argument: blockSize).
const rebuildBlocks = `INSERT INTO validator_blocks (lo, phase, n)
WITH r AS (SELECT name, phase, (ROW_NUMBER() OVER (ORDER BY name) - 1) / ? AS b FROM validators),
     l AS (SELECT b, CASE WHEN b = 0 THEN '' ELSE MIN(name) END AS lo FROM r GROUP BY b)
SELECT l.lo, r.phase, COUNT(*) FROM r JOIN l ON l.b = r.b GROUP BY l.lo, r.phase`

type block struct {
	Lo string
	N  int64
}

// blocks reads the validators' blocks in name order with their counts, of
// one phase or of all.
func (s *Store) blocks(ctx context.Context, phase domain.Phase) ([]block, error) {
	q := s.db.WithContext(ctx).Table("validator_blocks")
	if phase != "" {
		q = q.Select("lo, n").Where("phase = ? AND n > 0", string(phase))
	} else {
		q = q.Select("lo, SUM(n) AS n").Group("lo").Having("SUM(n) > 0")
	}
	var out []block
	err := q.Order("lo").Scan(&out).Error
	return out, err
}

// pageByBlocks reads a page of validators filtered at most by phase: the
// block counts locate the offset, and the page walks only inside its block.
func (s *Store) pageByBlocks(ctx context.Context, f domain.ValidatorFilter) ([]validatorRow, int64, error) {
	bs, err := s.blocks(ctx, f.Phase)
	if err != nil {
		return nil, 0, err
	}
	var total int64
	for _, b := range bs {
		total += b.N
	}
	offset := int64(f.Offset)
	var before int64
	for _, b := range bs {
		if offset < before+b.N {
			filter := func(tx *gorm.DB) *gorm.DB {
				tx = tx.Where("name >= ?", b.Lo)
				if f.Phase != "" {
					tx = tx.Where("phase = ?", string(f.Phase))
				}
				return tx
			}
			p := domain.Page{Offset: int(offset - before), Limit: f.Limit}
			rows, err := page[validatorRow](ctx, s.db, filter, p, total-before)
			return rows, total, err
		}
		before += b.N
	}
	return []validatorRow{}, total, nil
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
			tx = tx.Table("validators").Where("name >= ?", lo)
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
