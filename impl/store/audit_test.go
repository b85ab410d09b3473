package store_test

import (
	"context"
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
			{At: base, Subject: "alice", Operation: "allocateParty", Validator: "v1", Status: 200, RequestID: "r1"},
			{At: base.Add(time.Second), Subject: "bob", Operation: "offboardWalletUser", Validator: "v1",
				Targets: map[string]string{"username": "carol"}, Status: 409, RequestID: "r2"},
			// No validator: the entry is kept all the same (no foreign key).
			{At: base.Add(2 * time.Second), Subject: "alice", Operation: "createUser", Validator: "gone", Status: 502, RequestID: "r3"},
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
