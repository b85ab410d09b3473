package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/validator-manager/validator-manager/impl/store"
)

// backends are the databases every store test runs on: SQLite always,
// PostgreSQL when TEST_POSTGRES_DSN names a server (.ci/run sets it). Each
// PostgreSQL run gets a throwaway database, dropped afterwards.
func backends(t *testing.T) map[string]*store.Store {
	t.Helper()
	out := map[string]*store.Store{}
	lite, err := store.Open("sqlite", filepath.Join(t.TempDir(), "vm.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out["sqlite"] = lite

	dsn := os.Getenv("TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Log("TEST_POSTGRES_DSN is not set: PostgreSQL is not tested")
		return out
	}
	out["postgres"] = throwawayPostgres(t, dsn)
	return out
}

func throwawayPostgres(t *testing.T, dsn string) *store.Store {
	t.Helper()
	admin, err := store.Open("postgres", dsn)
	if err != nil {
		t.Fatalf("TEST_POSTGRES_DSN: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	name := "vm_test_" + hex.EncodeToString(suffix)
	if err := admin.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("TEST_POSTGRES_DSN must be a URL: %v", err)
	}
	u.Path = "/" + name
	s, err := store.Open("postgres", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return s
}

func TestPing(t *testing.T) {
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			if err := s.Ping(context.Background()); err != nil {
				t.Fatalf("got %v, want the database to answer", err)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	if _, err := store.Open("mysql", "x"); err == nil {
		t.Fatal("got no error for an unsupported driver")
	}
	if _, err := store.Open("postgres", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"); err == nil {
		t.Fatal("got no error for an unreachable PostgreSQL")
	}
}
