package store_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

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
