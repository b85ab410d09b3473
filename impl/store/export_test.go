package store

import "gorm.io/gorm"

// DB lets the behaviour tests read rows back with their own SQL.
func (s *Store) DB() *gorm.DB { return s.db }

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

// SmallBlocks cuts validator_blocks into blocks of size for one test, so
// that a few dozen rows exercise splits.
func SmallBlocks(t interface{ Cleanup(func()) }, size int64) {
	old := blockSize
	blockSize, blockMax = size, 2*size
	t.Cleanup(func() { blockSize, blockMax = old, 2*old })
}

// RareTrigram sets, for one test, how common the rarest trigram of a name
// filter may be for the trigram path (SQLite).
func RareTrigram(t interface{ Cleanup(func()) }, n int64) {
	old := rareTrigram
	rareTrigram = n
	t.Cleanup(func() { rareTrigram = old })
}
