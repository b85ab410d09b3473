package store_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

func TestAudit(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		base := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
		entries := []domain.AuditEntry{
			{At: base, Subject: "alice", Operation: "allocateParty", Validator: "v1", Status: 200, RequestID: "r1", Outcome: domain.AuditDone},
			{At: base.Add(time.Second), Subject: "bob", Operation: "offboardWalletUser", Validator: "v1",
				Targets: map[string]string{"username": "carol"}, Status: 409, RequestID: "r2", Outcome: domain.AuditDone},
			// No validator: the entry is kept all the same (no foreign key).
			{At: base.Add(2 * time.Second), Subject: "alice", Operation: "createUser", Validator: "gone", Status: 502, RequestID: "r3", Outcome: domain.AuditDone},
		}
		for _, e := range entries {
			wantErr(t, s.RecordAudit(ctx, e), nil)
		}
		tests := []struct {
			validator string
			limit     int
			want      []domain.AuditEntry
		}{
			{"", 10, []domain.AuditEntry{entries[2], entries[1], entries[0]}},
			{"", 1, []domain.AuditEntry{entries[2]}},
			{"v1", 10, []domain.AuditEntry{entries[1], entries[0]}},
			{"none", 10, []domain.AuditEntry{}},
		}
		for _, tt := range tests {
			got, err := s.ListAudit(ctx, tt.validator, tt.limit)
			wantErr(t, err, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("validator %q limit %d\n got %+v\nwant %+v", tt.validator, tt.limit, got, tt.want)
			}
		}
		_, err := s.ListAudit(ctx, "", 0)
		wantErr(t, err, domain.ErrInvalid)
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
			wantErr(t, s.CompleteAudit(ctx, done, 200), nil)
			crashed, err := s.BeginAudit(ctx, domain.AuditEntry{At: base.Add(time.Second), Subject: "bob", Operation: "createUser", Validator: "v1", RequestID: "r2"})
			wantErr(t, err, nil)
			wantErr(t, s.CompleteAudit(ctx, crashed+1000, 200), domain.ErrNotFound)

			want := []domain.AuditEntry{
				{At: base.Add(time.Second), Subject: "bob", Operation: "createUser", Validator: "v1", RequestID: "r2", Outcome: domain.AuditPending},
				{At: base, Subject: "alice", Operation: "allocateParty", Validator: "v1", Status: 200, RequestID: "r1", Outcome: domain.AuditDone},
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
			wantErr(t, s.CompleteAudit(ctx, crashed, 502), nil)
			want[0].Outcome, want[0].Status = domain.AuditDone, 502
			got, err = s.ListAudit(ctx, "", 10)
			wantErr(t, err, nil)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("late completion\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
