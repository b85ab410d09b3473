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
// transaction ends, however it ends.
func TestWriteGate(t *testing.T) {
	s, err := Open("sqlite", filepath.Join(t.TempDir(), "vm.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.db.Exec("CREATE TABLE g (n INTEGER PRIMARY KEY, v TEXT)").Error; err != nil {
		t.Fatal(err)
	}
	write := func() error {
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		return s.db.WithContext(c).Exec("INSERT INTO g (v) VALUES ('x')").Error
	}
	for _, end := range []string{"commit", "rollback"} {
		tx := s.db.WithContext(ctx).Begin()
		if tx.Error != nil {
			t.Fatal(tx.Error)
		}
		if err := write(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a write beside an open transaction: got %v, want it to wait in the gate until its deadline", err)
		}
		var n int64
		if err := s.db.WithContext(ctx).Table("g").Count(&n).Error; err != nil {
			t.Errorf("a read beside an open transaction: %v", err)
		}
		if end == "commit" {
			err = tx.Commit().Error
		} else {
			err = tx.Rollback().Error
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := write(); err != nil {
			t.Errorf("a write after the transaction's %s: %v", end, err)
		}
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
