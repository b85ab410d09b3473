package store_test

import (
	"context"
	"fmt"
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
			kind      domain.RunKind
			from      int
			limit     int
			want      []domain.Run
			wantTotal int64
		}{
			{domain.RunBackup, 0, 10, []domain.Run{b3twin, b3, b2, b1}, 4},
			{domain.RunBackup, 0, 2, []domain.Run{b3twin, b3}, 4},
			{domain.RunBackup, 2, 2, []domain.Run{b2, b1}, 4},
			{domain.RunBackup, 3, 5, []domain.Run{b1}, 4},
			{domain.RunBackup, 4, 5, []domain.Run{}, 4},
			{domain.RunPrune, 0, 10, []domain.Run{p1}, 1},
			{"", 0, 10, []domain.Run{b3twin, b3, b2, p1, b1}, 5},
			{"", 1, 3, []domain.Run{b3, b2, p1}, 5},
		}
		for _, tt := range tests {
			got, total, err := s.ListRuns(ctx, domain.RunFilter{Validator: "v1", Kind: tt.kind, Page: domain.Page{Offset: tt.from, Limit: tt.limit}})
			wantErr(t, err, nil)
			if !reflect.DeepEqual(got, tt.want) || total != tt.wantTotal {
				t.Fatalf("kind %q from %d limit %d\n got %d %+v\nwant %d %+v", tt.kind, tt.from, tt.limit, total, got, tt.wantTotal, tt.want)
			}
		}
		if got, total, err := s.ListRuns(ctx, domain.RunFilter{Validator: "absent", Page: domain.Page{Limit: 10}}); err != nil || total != 0 || got == nil || len(got) != 0 {
			t.Fatalf("runs of an unknown validator: got %v %d %v, want an empty page", got, total, err)
		}

		wantErr(t, s.RecordRun(ctx, &domain.Run{Validator: "v1", Kind: "restore"}), domain.ErrInvalid)
		wantErr(t, s.RecordRun(ctx, &domain.Run{Validator: "absent", Kind: domain.RunPrune}), domain.ErrNotFound)
		for _, f := range []domain.RunFilter{
			{Validator: "v1", Page: domain.Page{Limit: 0}},
			{Validator: "v1", Page: domain.Page{Offset: -1, Limit: 1}},
			{Validator: "v1", Kind: "restore", Page: domain.Page{Limit: 1}},
		} {
			_, _, err := s.ListRuns(ctx, f)
			wantErr(t, err, domain.ErrInvalid)
		}

		// A zero StartedAt is the time of recording.
		before := time.Now().UTC().Add(-time.Second)
		r := domain.Run{Validator: "v2", Kind: domain.RunPrune}
		wantErr(t, s.RecordRun(ctx, &r), nil)
		if r.StartedAt.Before(before) || r.StartedAt.Location() != time.UTC {
			t.Fatalf("got StartedAt %v, want now in UTC", r.StartedAt)
		}
	})
}

func TestObserveRun(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustCreateValidator(t, s, newValidator("v1"))
		start := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
		end := start.Add(90 * time.Second)
		yes, no := true, false
		running := domain.Run{Validator: "v1", Kind: domain.RunBackup, StartedAt: start, JobUID: "uid-1"}
		succeeded := running
		succeeded.FinishedAt, succeeded.Succeeded = &end, &yes
		failed := running
		failed.FinishedAt, failed.Succeeded, failed.Message = &end, &no, "BackoffLimitExceeded: Job has reached the specified backoff limit"

		// Each case observes its Job's states in order (a Job's status
		// changes, a relist repeats them) and wants the one stored run.
		tests := []struct {
			name     string
			observed []domain.Run
			want     domain.Run
		}{
			{"running", []domain.Run{running}, running},
			{"running, observed again", []domain.Run{running, running}, running},
			{"running then succeeded", []domain.Run{running, succeeded}, succeeded},
			{"running then failed", []domain.Run{running, failed}, failed},
			{"succeeded, observed again", []domain.Run{succeeded, succeeded}, succeeded},
			{"finished is final", []domain.Run{failed, running, succeeded}, failed},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				uid := fmt.Sprintf("uid-%d", i)
				var ids []int64
				for _, r := range tt.observed {
					r.JobUID = uid
					wantErr(t, s.ObserveRun(ctx, &r), nil)
					ids = append(ids, r.ID)
				}
				for _, id := range ids[1:] {
					if id != ids[0] {
						t.Fatalf("got ids %v, want one run", ids)
					}
				}
				want := tt.want
				want.ID, want.JobUID = ids[0], uid
				got, _, err := s.ListRuns(ctx, domain.RunFilter{Validator: "v1", Page: domain.Page{Limit: 500}})
				wantErr(t, err, nil)
				var mine []domain.Run
				for _, r := range got {
					if r.JobUID == uid {
						mine = append(mine, r)
					}
				}
				if len(mine) != 1 || !reflect.DeepEqual(mine[0], want) {
					t.Fatalf("\n got %+v\nwant [%+v]", mine, want)
				}
			})
		}

		bad := []struct {
			run  domain.Run
			want error
		}{
			{domain.Run{Validator: "v1", Kind: domain.RunPrune}, domain.ErrInvalid},
			{domain.Run{Validator: "v1", Kind: "restore", JobUID: "x"}, domain.ErrInvalid},
			{domain.Run{Validator: "absent", Kind: domain.RunPrune, JobUID: "x"}, domain.ErrNotFound},
		}
		for _, tt := range bad {
			wantErr(t, s.ObserveRun(ctx, &tt.run), tt.want)
		}
	})
}
