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

// TestMigration0022OnExistingRows: a database that holds validators
// written before migration 0022 (creating or not, of two phases, with list
// views) lists them exactly from memory after it, filtered and paged.
func TestMigration0022OnExistingRows(t *testing.T) {
	dsns := map[string]string{"sqlite": filepath.Join(t.TempDir(), "vm.db")}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		dsns["postgres"] = throwawayPostgres(t)
	}
	for driver, dsn := range dsns {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			var values []string
			phases := map[string]domain.Phase{}
			for i := range 2500 {
				name := fmt.Sprintf("v-%04d", (i*7919)%2500)
				phase := []domain.Phase{domain.PhasePending, domain.PhaseRunning}[i%2]
				creating := i%10 == 9
				values = append(values, fmt.Sprintf("('%s', '%s', %t, '{\"n\":\"%s\"}', 1, '2026-01-01 00:00:00', '2026-01-01 00:00:00')", name, phase, creating, name))
				if !creating {
					phases[name] = phase
				}
			}
			insert := "INSERT INTO validators (name, phase, creating, list_view, list_view_version, created_at, updated_at) VALUES " + strings.Join(values, ", ")
			wantErr(t, store.MigrateTo(driver, dsn, 21, insert), nil)

			s, err := store.Open(driver, dsn)
			if err != nil {
				t.Fatalf("migrate: %v", err)
			}
			defer s.Close()
			page, _, err := s.ListValidators(ctx, domain.ValidatorFilter{Page: domain.Page{Offset: 1000, Limit: 1}})
			wantErr(t, err, nil)
			if len(page) != 1 || string(page[0].ListView) != `{"n":"`+page[0].Name+`"}` || page[0].ListViewVersion != 1 {
				t.Fatalf("got %+v, want a validator with its list view", page)
			}
			for _, f := range []domain.ValidatorFilter{
				{Page: domain.Page{Offset: 1999, Limit: 3}},
				{Phase: domain.PhaseRunning, Page: domain.Page{Offset: 900, Limit: 2}},
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
