package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// backends are the databases every store test runs on: SQLite always,
// PostgreSQL when TEST_POSTGRES_DSN names a server (.ci/run sets it). Each
// PostgreSQL run gets a throwaway database, dropped afterwards.
func backends(t testing.TB) map[string]*store.Store {
	t.Helper()
	out := map[string]*store.Store{}
	lite, err := store.Open("sqlite", filepath.Join(t.TempDir(), "vm.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out["sqlite"] = lite

	if os.Getenv("TEST_POSTGRES_DSN") == "" {
		t.Log("TEST_POSTGRES_DSN is not set: PostgreSQL is not tested")
		return out
	}
	pg, err := store.Open("postgres", throwawayPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	out["postgres"] = pg
	return out
}

// each runs f as a subtest on every backend.
func each(t *testing.T, f func(t *testing.T, s *store.Store)) {
	t.Helper()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) { f(t, s) })
	}
}

// throwawayPostgres is a database of its own on the TEST_POSTGRES_DSN server.
func throwawayPostgres(t testing.TB) string { return apitest.ThrowawayPostgres(t) }

// wantErr fails unless err matches want with errors.Is (want nil: no error).
func wantErr(t *testing.T, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("got error %v, want none", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("got error %v, want %s", err, codeName(want))
	}
}

func codeName(err error) string {
	var e *domain.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	return map[domain.Code]string{
		domain.CodeInvalid:  "domain.ErrInvalid",
		domain.CodeNotFound: "domain.ErrNotFound",
		domain.CodeConflict: "domain.ErrConflict",
	}[e.Code]
}

// count runs a COUNT query on the store's database.
func count(t *testing.T, s *store.Store, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.DB().Raw(sql, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestPing(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		if err := s.Ping(context.Background()); err != nil {
			t.Fatalf("got %v, want the database to answer", err)
		}
	})
}

func TestOpenRefuses(t *testing.T) {
	if _, err := store.Open("mysql", "x"); err == nil {
		t.Fatal("got no error for an unsupported driver")
	}
	if _, err := store.Open("postgres", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"); err == nil {
		t.Fatal("got no error for an unreachable PostgreSQL")
	}
}

// TestPool: the pool settings reach database/sql, and pings reuse the idle
// connection instead of dialling.
func TestPool(t *testing.T) {
	s, err := store.OpenWith("sqlite", filepath.Join(t.TempDir(), "vm.db"), store.Pool{MaxOpen: 3, MaxIdle: 2, MaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 20 {
		if err := s.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	sqlDB, _ := s.DB().DB()
	st := sqlDB.Stats()
	if st.MaxOpenConnections != 3 || st.OpenConnections > 2 {
		t.Fatalf("got max open %d, open %d; want 3, at most 2 after sequential pings", st.MaxOpenConnections, st.OpenConnections)
	}
}

// TestPingWrites: the database's health is DOWN, naming it, while it
// cannot be written, and UP again when it can. Tests run as root, where a
// file's mode does not stop writes and a read-only remount needs
// privileges; instead the pool's one connection is made read-only from the
// inside, and SQLite then refuses writes with the error of a read-only file
// (SQLITE_READONLY), PostgreSQL with that of a read-only standby.
func TestPingWrites(t *testing.T) {
	type backend struct{ driver, dsn, where, readOnly, writable string }
	backends := []backend{{"sqlite", filepath.Join(t.TempDir(), "vm.db"), "vm.db", "PRAGMA query_only = ON", "PRAGMA query_only = OFF"}}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		backends = append(backends, backend{"postgres", throwawayPostgres(t), "the PostgreSQL database", "SET default_transaction_read_only = on", "SET default_transaction_read_only = off"})
	}
	for _, b := range backends {
		t.Run(b.driver, func(t *testing.T) {
			ctx := context.Background()
			s, err := store.OpenWith(b.driver, b.dsn, store.Pool{MaxOpen: 1, MaxIdle: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("writable: got %v, want UP", err)
			}
			if err := s.Exec(ctx, b.readOnly); err != nil {
				t.Fatal(err)
			}
			err = s.Ping(ctx)
			for _, want := range []string{b.where, "cannot be written", "read"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("read-only: got %v, want an error containing %q", err, want)
				}
			}
			if err := s.Exec(ctx, b.writable); err != nil {
				t.Fatal(err)
			}
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("writable again: got %v, want UP", err)
			}
		})
	}
}

// TestRecorded: a new database records no installation and no validators;
// once the installation is made, it reports it.
func TestRecorded(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id, validators, err := s.Recorded(ctx)
		if err != nil || id != "" || validators {
			t.Fatalf("new database: got %q, %v, %v; want no installation, no validators", id, validators, err)
		}
		made, err := s.Instance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if id, _, err = s.Recorded(ctx); err != nil || id != made {
			t.Fatalf("got %q, %v; want %q", id, err, made)
		}
	})
}

// TestInstance: a database has one installation id, the same for every
// caller and every open, made on first use.
func TestInstance(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ids := make([]string, 4)
		errs := run(len(ids), func(i int) (err error) {
			ids[i], err = s.Instance(context.Background())
			return err
		})
		for i, err := range errs {
			wantErr(t, err, nil)
			if ids[i] == "" || ids[i] != ids[0] {
				t.Fatalf("got ids %v, want one non-empty id", ids)
			}
		}
	})
}
