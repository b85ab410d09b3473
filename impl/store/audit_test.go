package store_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

func TestAudit(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		base := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
		entries := []domain.AuditEntry{
			{At: base, Subject: "alice", Role: "operator", Operation: "allocateParty", Validator: "v1", Status: 200, RequestID: "r1", Outcome: domain.AuditDone},
			{At: base.Add(time.Second), Subject: "bob", Operation: "offboardWalletUser", Validator: "v1",
				Targets: map[string]string{"username": "carol"}, Status: 409, RequestID: "r2", Outcome: domain.AuditDone},
			// No validator: the entry is kept all the same (no foreign key).
			{At: base.Add(2 * time.Second), Subject: "alice", Operation: "createUser", Validator: "gone", Status: 502, RequestID: "r3", Outcome: domain.AuditDone},
		}
		for _, e := range entries {
			wantErr(t, s.RecordAudit(ctx, e), nil)
		}
		all, err := s.ListAudit(ctx, "", 10)
		wantErr(t, err, nil)
		if len(all) != 3 || !(all[0].ID > all[1].ID && all[1].ID > all[2].ID && all[2].ID > 0) {
			t.Fatalf("ids: got %+v, want three, descending", all)
		}
		for i := range entries {
			entries[i].ID = all[len(all)-1-i].ID
		}
		page := func(limit int) domain.Page { return domain.Page{Limit: limit} }
		tests := []struct {
			name string
			f    domain.AuditFilter
			want []domain.AuditEntry
		}{
			{"all", domain.AuditFilter{Page: page(10)}, []domain.AuditEntry{entries[2], entries[1], entries[0]}},
			{"first page", domain.AuditFilter{Page: page(1)}, []domain.AuditEntry{entries[2]}},
			{"second page", domain.AuditFilter{Page: domain.Page{Offset: 1, Limit: 1}}, []domain.AuditEntry{entries[1]}},
			{"cursor", domain.AuditFilter{Before: entries[2].ID, Page: page(10)}, []domain.AuditEntry{entries[1], entries[0]}},
			{"validator", domain.AuditFilter{Validator: "v1", Page: page(10)}, []domain.AuditEntry{entries[1], entries[0]}},
			{"subject", domain.AuditFilter{Subject: "alice", Page: page(10)}, []domain.AuditEntry{entries[2], entries[0]}},
			{"since", domain.AuditFilter{Since: base.Add(time.Second), Page: page(10)}, []domain.AuditEntry{entries[2], entries[1]}},
			{"until", domain.AuditFilter{Until: base.Add(time.Second), Page: page(10)}, []domain.AuditEntry{entries[0]}},
			{"all filters", domain.AuditFilter{Validator: "v1", Subject: "alice", Since: base, Until: base.Add(time.Hour), Page: page(10)}, []domain.AuditEntry{entries[0]}},
			{"none", domain.AuditFilter{Validator: "none", Page: page(10)}, []domain.AuditEntry{}},
		}
		for _, tt := range tests {
			got, err := s.FindAudit(ctx, tt.f)
			wantErr(t, err, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%s\n got %+v\nwant %+v", tt.name, got, tt.want)
			}
			f := tt.f
			f.Page = domain.Page{}
			n, err := s.CountAudit(ctx, f)
			wantErr(t, err, nil)
			if tt.f.Offset == 0 && tt.f.Limit == 10 && n != int64(len(tt.want)) {
				t.Fatalf("%s: count: got %d, want %d", tt.name, n, len(tt.want))
			}
		}
		_, err = s.ListAudit(ctx, "", 0)
		wantErr(t, err, domain.ErrInvalid)
	})
}

// TestAuditAppendOnly: a completed entry is never changed, and the
// retention purge deletes exactly the entries older than its bound.
func TestAuditAppendOnly(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		base := time.Now().UTC().Add(-100 * 24 * time.Hour).Truncate(time.Second)
		id, err := s.BeginAudit(ctx, domain.AuditEntry{At: base, Subject: "alice", Operation: "createValidator", RequestID: "r1"})
		wantErr(t, err, nil)
		wantErr(t, s.CompleteAudit(ctx, id, 201, "v1"), nil)
		wantErr(t, s.CompleteAudit(ctx, id, 500, "other"), domain.ErrNotFound)
		wantErr(t, s.RecordAudit(ctx, domain.AuditEntry{At: base.Add(50 * 24 * time.Hour), Subject: "bob", Operation: "updateValidator", Validator: "v1", Status: 200, RequestID: "r2"}), nil)
		got, err := s.ListAudit(ctx, "v1", 10)
		wantErr(t, err, nil)
		if len(got) != 2 || got[1].Status != 201 || got[1].Validator != "v1" || got[1].Outcome != domain.AuditDone {
			t.Fatalf("got %+v, want the create completed once: 201, validator v1 (from its body)", got)
		}
		n, err := s.PurgeAudit(ctx, base.Add(time.Hour))
		wantErr(t, err, nil)
		got, err = s.ListAudit(ctx, "", 10)
		wantErr(t, err, nil)
		if n != 1 || len(got) != 1 || got[0].Subject != "bob" {
			t.Fatalf("purge: deleted %d, left %+v; want 1 deleted and bob's entry left", n, got)
		}
	})
}

// TestAuditPendingThenUnknown: an entry begun and completed reads done with
// the answer's status; one begun and never completed (the server stopped
// between the two writes) reads pending until the next start marks it
// unknown, and a late completion still records the answer.
func TestAuditPendingThenUnknown(t *testing.T) {
	dsns := map[string]string{"sqlite": filepath.Join(t.TempDir(), "vm.db")}
	if pg := throwawayPostgres(t); pg != "" {
		dsns["postgres"] = pg
	} else {
		t.Log("TEST_POSTGRES_DSN is not set: PostgreSQL is not tested")
	}
	for driver, dsn := range dsns {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s, err := store.Open(driver, dsn)
			wantErr(t, err, nil)
			base := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
			done, err := s.BeginAudit(ctx, domain.AuditEntry{At: base, Subject: "alice", Operation: "allocateParty", Validator: "v1", RequestID: "r1"})
			wantErr(t, err, nil)
			wantErr(t, s.CompleteAudit(ctx, done, 200, ""), nil)
			crashed, err := s.BeginAudit(ctx, domain.AuditEntry{At: base.Add(time.Second), Subject: "bob", Operation: "createUser", Validator: "v1", RequestID: "r2"})
			wantErr(t, err, nil)
			wantErr(t, s.CompleteAudit(ctx, crashed+1000, 200, ""), domain.ErrNotFound)

			want := []domain.AuditEntry{
				{ID: crashed, At: base.Add(time.Second), Subject: "bob", Operation: "createUser", Validator: "v1", RequestID: "r2", Outcome: domain.AuditPending},
				{ID: done, At: base, Subject: "alice", Operation: "allocateParty", Validator: "v1", Status: 200, RequestID: "r1", Outcome: domain.AuditDone},
			}
			got, err := s.ListAudit(ctx, "", 10)
			wantErr(t, err, nil)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("before restart\n got %+v\nwant %+v", got, want)
			}
			s.Close()

			s, err = store.Open(driver, dsn)
			wantErr(t, err, nil)
			defer s.Close()
			want[0].Outcome = domain.AuditUnknown
			got, err = s.ListAudit(ctx, "", 10)
			wantErr(t, err, nil)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after restart\n got %+v\nwant %+v", got, want)
			}
			wantErr(t, s.CompleteAudit(ctx, crashed, 502, ""), nil)
			want[0].Outcome, want[0].Status = domain.AuditDone, 502
			got, err = s.ListAudit(ctx, "", 10)
			wantErr(t, err, nil)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("late completion\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestAuditKeepsWhatWasSent: a call's text that a column cannot hold as
// sent (invalid UTF-8, NUL: PostgreSQL refuses both) is still audited,
// with U+FFFD in its place.
func TestAuditKeepsWhatWasSent(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id, err := s.BeginAudit(ctx, domain.AuditEntry{Subject: "al\x00ice", Operation: "createPruneSchedule", Validator: "v\xff1", RequestID: "r1"})
		wantErr(t, err, nil)
		wantErr(t, s.CompleteAudit(ctx, id, 400, "n\x00ame"), nil)
		got, err := s.ListAudit(ctx, "", 1)
		wantErr(t, err, nil)
		if len(got) != 1 || got[0].Subject != "al\uFFFDice" || got[0].Validator != "n\uFFFDame" || got[0].Status != 400 {
			t.Fatalf("got %+v, want the entry with U+FFFD for what the column cannot hold", got)
		}
		long := "v" + strings.Repeat("é", 5000) // 10 KB: more than an index entry holds
		wantErr(t, s.RecordAudit(ctx, domain.AuditEntry{Subject: "bob", Operation: "createValidator", Validator: long, Status: 400, RequestID: "r2"}), nil)
		got, err = s.ListAudit(ctx, "", 1)
		wantErr(t, err, nil)
		if v := got[0].Validator; len(v) > 1024+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(v, "…")) || !utf8.ValidString(v) {
			t.Fatalf("long validator: got %d bytes %.40q…, want at most 1 KB of its start, valid UTF-8", len(v), v)
		}
	})
}
