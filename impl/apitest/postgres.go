package apitest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx" driver, the one GORM's PostgreSQL driver uses
)

// ThrowawayPostgres creates an empty database on the TEST_POSTGRES_DSN
// server and returns its DSN; "" when the variable is not set. The database
// is dropped when the test ends, after whatever the test opened on it is
// closed (cleanups run last-in first-out). The server's own database is
// only connected to, never migrated: tests of different versions of the
// schema share that server.
func ThrowawayPostgres(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("TEST_POSTGRES_DSN")
	if dsn == "" {
		return ""
	}
	admin, err := sql.Open("pgx", dsn)
	if err == nil {
		err = admin.PingContext(context.Background())
	}
	if err != nil {
		t.Fatalf("TEST_POSTGRES_DSN: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	name := "vm_test_" + hex.EncodeToString(suffix)
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("TEST_POSTGRES_DSN must be a URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
