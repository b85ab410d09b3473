package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// BenchmarkListValidators reads page 51 (20 rows) of the 3,439 validators out
// of 10,000 whose name contains "7". Filter, count and page run in the
// database: 20 rows reach Go. (A substring test scans the names; no index helps.)
func BenchmarkListValidators(b *testing.B) {
	for name, s := range backends(b) {
		b.Run(name, func(b *testing.B) {
			seed(b, s, 10000)
			f := domain.ValidatorFilter{
				NameContains: "7", // 3,439 of the 10,000 names
				Page:         domain.Page{Offset: 1000, Limit: 20},
			}
			ctx := context.Background()
			for b.Loop() {
				page, total, err := s.ListValidators(ctx, f)
				if err != nil || len(page) != 20 || total != 3439 {
					b.Fatalf("got %d rows, total %d, error %v; want 20 rows, total 3439", len(page), total, err)
				}
			}
		})
	}
}

// seed inserts n validators in one transaction (one commit, not n); a
// second run of the benchmark (-count) finds them there.
func seed(b *testing.B, s *store.Store, n int) {
	b.Helper()
	at := time.Now().UTC()
	err := s.DB().Transaction(func(tx *gorm.DB) error {
		for i := range n {
			err := tx.Exec(`INSERT INTO validators (name, phase, spec, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
				fmt.Sprintf("node-%05d", i), string(domain.PhaseRunning), `{"imageTag":"0.4.1"}`, at, at).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
