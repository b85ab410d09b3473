package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

func TestMigrationsMatchAcrossDialects(t *testing.T) {
	lite, err := store.MigrationVersions("sqlite")
	wantErr(t, err, nil)
	pg, err := store.MigrationVersions("postgres")
	wantErr(t, err, nil)
	if len(lite) == 0 || !reflect.DeepEqual(lite, pg) {
		t.Fatalf("got sqlite versions %v and postgres versions %v, want the same, not empty", lite, pg)
	}
}

// TestOpenMigrates opens the same database several times at once and once
// more afterwards: every Open succeeds, each migration is recorded once, and
// the data survives.
func TestOpenMigrates(t *testing.T) {
	dsns := map[string]string{"sqlite": filepath.Join(t.TempDir(), "vm.db")}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		dsns["postgres"] = throwawayPostgres(t)
	} else {
		t.Log("TEST_POSTGRES_DSN is not set: PostgreSQL is not tested")
	}
	for driver, dsn := range dsns {
		t.Run(driver, func(t *testing.T) {
			stores := make([]*store.Store, 5)
			errs := run(len(stores), func(i int) (err error) {
				stores[i], err = store.Open(driver, dsn)
				return err
			})
			for i, err := range errs {
				if err != nil {
					t.Fatalf("open %d of %d at once: %v", i+1, len(stores), err)
				}
				t.Cleanup(func() { stores[i].Close() })
			}
			mustCreateValidator(t, stores[0], newValidator("survivor"))

			again, err := store.Open(driver, dsn)
			if err != nil {
				t.Fatalf("open again: %v", err)
			}
			t.Cleanup(func() { again.Close() })
			_, err = again.GetValidator(context.Background(), "survivor")
			wantErr(t, err, nil)

			want, err := store.MigrationVersions(driver)
			wantErr(t, err, nil)
			var got []int64
			if err := again.DB().Raw("SELECT version FROM schema_migrations ORDER BY version").Scan(&got).Error; err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got schema_migrations %v, want each of %v once", got, want)
			}
		})
	}
}

// undo0003 takes a database back to before migration 0003.
var undo0003 = map[string][]string{
	"sqlite": {
		"DROP TRIGGER validators_block_insert", "DROP TRIGGER validators_block_delete", "DROP TRIGGER validators_block_phase", "DROP TRIGGER validators_block_shown",
		"DROP TRIGGER validators_trigrams_insert", "DROP TRIGGER validators_trigrams_delete",
		"DROP TABLE validator_blocks", "DROP TABLE validator_trigrams", "DROP TABLE trigram_positions",
	},
	"postgres": {
		"DROP FUNCTION validator_blocks_track() CASCADE", "DROP TABLE validator_blocks",
		"DROP INDEX IF EXISTS validators_name_trgm", "DROP INDEX IF EXISTS remote_participants_name_trgm",
	},
}

// TestMigration0003OnExistingRows: migration 0003 applied to a database that
// already holds validators cuts blocks and trigrams that page and filter
// them exactly.
func TestMigration0003OnExistingRows(t *testing.T) {
	dsns := map[string]string{"sqlite": filepath.Join(t.TempDir(), "vm.db")}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		dsns["postgres"] = throwawayPostgres(t)
	}
	for driver, dsn := range dsns {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s, err := store.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			var vs []domain.Validator
			phases := map[string]domain.Phase{}
			for i := range 2500 {
				v := newValidator(fmt.Sprintf("v-%04d", (i*7919)%2500))
				v.Phase = []domain.Phase{domain.PhasePending, domain.PhaseRunning}[i%2]
				vs = append(vs, *v)
				phases[v.Name] = v.Phase
			}
			wantErr(t, s.ImportValidators(ctx, vs), nil)
			stmts := append(undo0003[driver],
				"DROP INDEX validators_phase_name", "DROP INDEX remote_participants_phase_name",
				"CREATE INDEX validators_phase ON validators (phase)",
				"CREATE INDEX remote_participants_phase ON remote_participants (phase)",
				"DELETE FROM schema_migrations WHERE version = 3")
			for _, stmt := range stmts {
				wantErr(t, s.Exec(ctx, stmt), nil)
			}
			s.Close()

			s, err = store.Open(driver, dsn)
			if err != nil {
				t.Fatalf("migrate again: %v", err)
			}
			defer s.Close()
			if n := count(t, s, "SELECT COUNT(DISTINCT lo) FROM validator_blocks"); n != 3 {
				t.Fatalf("got %d blocks for 2,500 validators, want 3", n)
			}
			for _, f := range []domain.ValidatorFilter{
				{Page: domain.Page{Offset: 1999, Limit: 3}},
				{Phase: domain.PhaseRunning, Page: domain.Page{Offset: 1000, Limit: 2}},
				{NameContains: "-12", Page: domain.Page{Offset: 5, Limit: 2}},
				{NameContains: "v-2499", Page: domain.Page{Limit: 2}},
			} {
				var want []string
				for name, p := range phases {
					if (f.Phase == "" || p == f.Phase) && strings.Contains(name, f.NameContains) {
						want = append(want, name)
					}
				}
				sort.Strings(want)
				total := len(want)
				want = want[min(f.Offset, total):min(f.Offset+f.Limit, total)]
				got, n, err := s.ListValidators(ctx, f)
				wantErr(t, err, nil)
				if names := validatorNames(got); n != int64(total) || !reflect.DeepEqual(names, want) {
					t.Fatalf("%+v: got %q total %d, want %q total %d", f, names, n, want, total)
				}
			}
		})
	}
}
