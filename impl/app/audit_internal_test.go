package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// TestPurgeAudit: the leader's purge deletes the entries older than
// audit.retention when it starts, keeps the others, and stops with its
// context; with retention 0 it deletes nothing.
func TestPurgeAudit(t *testing.T) {
	for _, tt := range []struct {
		retention time.Duration
		left      int
	}{{24 * time.Hour, 1}, {0, 2}} {
		st, err := store.Open("sqlite", filepath.Join(t.TempDir(), "vm.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ctx := context.Background()
		for i, at := range []time.Time{time.Now().Add(-48 * time.Hour), time.Now().Add(-time.Minute)} {
			if err := st.RecordAudit(ctx, domain.AuditEntry{At: at, Subject: "alice", Operation: "createValidator", Validator: "v1", Status: 201, RequestID: string(rune('a' + i))}); err != nil {
				t.Fatal(err)
			}
		}
		a := &App{Store: st, Config: config.Config{AuditRetention: tt.retention}, Log: slog.New(slog.DiscardHandler)}
		run, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.purgeAudit(run) }()
		var left []domain.AuditEntry
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if left, err = st.FindAudit(ctx, domain.AuditFilter{Page: domain.Page{Limit: 10}}); err != nil {
				t.Fatal(err)
			}
			if len(left) == tt.left {
				break
			}
		}
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if left, err = st.FindAudit(ctx, domain.AuditFilter{Page: domain.Page{Limit: 10}}); err != nil {
			t.Fatal(err)
		}
		if len(left) != tt.left || left[0].RequestID != "b" {
			t.Errorf("retention %s: left %+v, want %d entries, the newest first", tt.retention, left, tt.left)
		}
	}
}
