package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/validator-manager/validator-manager/impl/store"
)

// ThrowawayPostgres creates an empty database on the TEST_POSTGRES_DSN
// server and returns its DSN; "" when the variable is not set. The database
// is dropped when the test ends, after whatever the test opened on it is
// closed (cleanups run last-in first-out).
func ThrowawayPostgres(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("TEST_POSTGRES_DSN")
	if dsn == "" {
		return ""
	}
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
	t.Cleanup(func() {
		if err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
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
