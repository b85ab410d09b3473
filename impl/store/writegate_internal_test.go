package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteGate: while a transaction is open, a write of this process
// waits in the gate (and gives up with its context), not in SQLite's busy
// handler; a read does not wait; the write goes through once the
// transaction ends. A writing query holds the gate until its rows close.
func TestWriteGate(t *testing.T) {
	s, err := Open("sqlite", filepath.Join(t.TempDir(), "vm.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	db := s.sqlDB
	if _, err := db.ExecContext(ctx, "CREATE TABLE g (n INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	write := func() error {
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := db.ExecContext(c, "INSERT INTO g (v) VALUES ('x')")
		return err
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a write beside an open transaction: got %v, want it to wait in the gate until its deadline", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM g").Scan(&n); err != nil {
		t.Errorf("a read beside an open transaction: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := write(); err != nil {
		t.Errorf("a write after the transaction: %v", err)
	}

	rows, err := db.QueryContext(ctx, "INSERT INTO g (v) VALUES ('y') RETURNING n")
	if err != nil {
		t.Fatal(err)
	}
	if err := write(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a write beside an open writing query: got %v, want it to wait", err)
	}
	rows.Close()
	if err := write(); err != nil {
		t.Errorf("a write after the writing query's rows closed: %v", err)
	}
}

func TestReads(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1": true, "  select * from g": true, "(SELECT 1)": true,
		"INSERT INTO g VALUES (1)": false, "UPDATE g SET v = 1": false, "DELETE FROM g": false,
		"WITH x AS (SELECT 1) DELETE FROM g": false, "PRAGMA foreign_keys = on": false, "": false,
	} {
		if got := reads(q); got != want {
			t.Errorf("reads(%q) = %v, want %v", q, got, want)
		}
	}
}
