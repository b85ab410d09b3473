package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

func TestRuns(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustCreateValidator(t, s, newValidator("v1"))
		mustCreateValidator(t, s, newValidator("v2"))
		base := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)

		record := func(validator string, kind domain.RunKind, started time.Time) domain.Run {
			t.Helper()
			r := domain.Run{Validator: validator, Kind: kind, StartedAt: started}
			wantErr(t, s.RecordRun(ctx, &r), nil)
			if r.ID == 0 {
				t.Fatalf("got ID 0, want the stored run's id")
			}
			return r
		}
		// Recorded out of order; two runs start at the same instant.
		b2 := record("v1", domain.RunBackup, base.Add(2*time.Hour))
		b1 := record("v1", domain.RunBackup, base.Add(time.Hour))
		b3 := record("v1", domain.RunBackup, base.Add(3*time.Hour+500*time.Millisecond))
		b3twin := record("v1", domain.RunBackup, base.Add(3*time.Hour+500*time.Millisecond))
		p1 := record("v1", domain.RunPrune, base.Add(90*time.Minute))
		record("v2", domain.RunBackup, base.Add(4*time.Hour))

		finished := base.Add(2*time.Hour + 10*time.Minute)
		wantErr(t, s.FinishRun(ctx, b2.ID, true, "7 backups kept", finished), nil)
		wantErr(t, s.FinishRun(ctx, p1.ID, false, "participant unreachable", finished), nil)
		wantErr(t, s.FinishRun(ctx, b2.ID, false, "again", finished), domain.ErrConflict)
		wantErr(t, s.FinishRun(ctx, 999999, true, "", finished), domain.ErrNotFound)
		yes, no := true, false
		b2.FinishedAt, b2.Succeeded, b2.Message = &finished, &yes, "7 backups kept"
		p1.FinishedAt, p1.Succeeded, p1.Message = &finished, &no, "participant unreachable"

		tests := []struct {
			kind  domain.RunKind
			limit int
			want  []domain.Run
		}{
			{domain.RunBackup, 10, []domain.Run{b3twin, b3, b2, b1}},
			{domain.RunBackup, 2, []domain.Run{b3twin, b3}},
			{domain.RunPrune, 10, []domain.Run{p1}},
			{"", 10, []domain.Run{b3twin, b3, b2, p1, b1}},
		}
		for _, tt := range tests {
			got, err := s.ListRuns(ctx, "v1", tt.kind, tt.limit)
			wantErr(t, err, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("kind %q limit %d\n got %+v\nwant %+v", tt.kind, tt.limit, got, tt.want)
			}
		}

		wantErr(t, s.RecordRun(ctx, &domain.Run{Validator: "v1", Kind: "restore"}), domain.ErrInvalid)
		wantErr(t, s.RecordRun(ctx, &domain.Run{Validator: "absent", Kind: domain.RunPrune}), domain.ErrNotFound)
		_, err := s.ListRuns(ctx, "v1", domain.RunBackup, 0)
		wantErr(t, err, domain.ErrInvalid)

		// A zero StartedAt is the time of recording.
		before := time.Now().UTC().Add(-time.Second)
		r := domain.Run{Validator: "v2", Kind: domain.RunPrune}
		wantErr(t, s.RecordRun(ctx, &r), nil)
		if r.StartedAt.Before(before) || r.StartedAt.Location() != time.UTC {
			t.Fatalf("got StartedAt %v, want now in UTC", r.StartedAt)
		}
	})
}
