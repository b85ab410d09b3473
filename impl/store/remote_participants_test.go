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

func newParticipant(name string) *domain.RemoteParticipant {
	return &domain.RemoteParticipant{
		Name:          name,
		Spec:          []byte(`{"authProvider":"custom"}`),
		Phase:         domain.PhasePending,
		AdminAddress:  name + ".example",
		AdminPort:     "5002",
		LedgerAddress: name + ".example",
		LedgerPort:    "5001",
	}
}

func mustCreateParticipant(t *testing.T, s *store.Store, p *domain.RemoteParticipant) {
	t.Helper()
	if err := s.CreateRemoteParticipant(context.Background(), p); err != nil {
		t.Fatalf("create remote participant %q: %v", p.Name, err)
	}
}

func wantParticipant(t *testing.T, s *store.Store, want domain.RemoteParticipant) {
	t.Helper()
	got, err := s.GetRemoteParticipant(context.Background(), want.Name)
	wantErr(t, err, nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n got %+v\nwant %+v", got, want)
	}
}

func TestRemoteParticipantLifecycle(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newParticipant("rp1")
		mustCreateParticipant(t, s, p)
		if p.CreatedAt.IsZero() || !p.UpdatedAt.Equal(p.CreatedAt) || p.Healthy != nil || p.LastCheckedAt != nil {
			t.Fatalf("got %+v, want timestamps set and no health check", p)
		}
		wantParticipant(t, s, *p)

		err := s.CreateRemoteParticipant(ctx, newParticipant("rp1"))
		wantErr(t, err, domain.ErrConflict)
		if got, want := err.Error(), `remote participant "rp1" already exists`; got != want {
			t.Fatalf("got message %q, want %q", got, want)
		}

		checked := time.Date(2025, 3, 1, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
		wantErr(t, s.RecordParticipantHealth(ctx, "rp1", false, checked), nil)
		wantErr(t, s.RecordParticipantHealth(ctx, "absent", true, checked), domain.ErrNotFound)
		healthy := false
		at := checked.UTC().Truncate(time.Microsecond) // stored in UTC, to the microsecond
		p.Healthy, p.LastCheckedAt = &healthy, &at
		wantParticipant(t, s, *p)
		// Not probed: the record is cleared, twice as well as once.
		for range 2 {
			wantErr(t, s.ForgetParticipantHealth(ctx, "rp1"), nil)
			p.Healthy, p.LastCheckedAt = nil, nil
			wantParticipant(t, s, *p)
		}
		wantErr(t, s.ForgetParticipantHealth(ctx, "absent"), domain.ErrNotFound)
		wantErr(t, s.RecordParticipantHealth(ctx, "rp1", false, checked), nil)
		p.Healthy, p.LastCheckedAt = &healthy, &at
		wantParticipant(t, s, *p)

		edit := domain.RemoteParticipant{
			Name: "rp1", Spec: []byte(`{"authProvider":"provider-1"}`), Phase: domain.PhaseRunning,
			AdminAddress: "admin.example", AdminPort: "6002", LedgerAddress: "ledger.example", LedgerPort: "6001",
		}
		wantErr(t, s.UpdateRemoteParticipant(ctx, &edit), nil)
		// The health check survives an edit of the registration.
		if edit.Healthy == nil || *edit.Healthy || !edit.LastCheckedAt.Equal(at) || !edit.CreatedAt.Equal(p.CreatedAt) {
			t.Fatalf("got %+v, want the health check and CreatedAt kept", edit)
		}
		wantParticipant(t, s, edit)
		wantErr(t, s.UpdateRemoteParticipant(ctx, newParticipant("absent")), domain.ErrNotFound)

		wantErr(t, s.DeleteRemoteParticipant(ctx, "rp1"), nil)
		_, err = s.GetRemoteParticipant(ctx, "rp1")
		wantErr(t, err, domain.ErrNotFound)
		wantErr(t, s.DeleteRemoteParticipant(ctx, "rp1"), domain.ErrNotFound)
	})
}

func TestListRemoteParticipants(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now()
		for i, f := range listFixture {
			p := newParticipant(f.name)
			p.Phase = f.phase
			mustCreateParticipant(t, s, p)
			switch i % 3 { // healthy, unhealthy, never checked
			case 0:
				wantErr(t, s.RecordParticipantHealth(ctx, f.name, true, now), nil)
			case 1:
				wantErr(t, s.RecordParticipantHealth(ctx, f.name, false, now), nil)
			}
		}
		yes, no := true, false
		tests := []struct {
			contains string
			phase    domain.Phase
			healthy  *bool
			want     []string
		}{
			{"", "", nil, []string{"100%", "AB", "Ab", "a%b", `a\b`, "a_b", "ab", "abc", "axb", `back\slash`, "pre_fix", "xab"}},
			{"%", "", nil, []string{"100%", "a%b"}},
			{"_", "", nil, []string{"a_b", "pre_fix"}},
			{`\`, "", nil, []string{`a\b`, `back\slash`}},
			{"a_b", "", nil, []string{"a_b"}},
			{"AB", "", nil, []string{"AB"}},
			{"ab", "", nil, []string{"ab", "abc", "xab"}},
			{"", "", &yes, []string{"100%", "AB", "a%b", "axb"}},
			{"", "", &no, []string{"a_b", "ab", "abc", "pre_fix"}},
			{"", domain.PhaseRunning, &yes, []string{"AB", "a%b"}},
			{"b", domain.PhaseCompleted, nil, []string{"abc", "axb", `back\slash`}},
			{"ab", "", &no, []string{"ab", "abc"}},
			{"ab", "", &yes, nil}, // xab was never checked
		}
		for _, tt := range tests {
			name := fmt.Sprintf("%q %s", tt.contains, tt.phase)
			if tt.healthy != nil {
				name += fmt.Sprint(" healthy=", *tt.healthy)
			}
			t.Run(name, func(t *testing.T) {
				got, total, err := s.ListRemoteParticipants(ctx, domain.RemoteParticipantFilter{
					NameContains: tt.contains, Phase: tt.phase, Healthy: tt.healthy, Page: domain.Page{Limit: 100},
				})
				wantErr(t, err, nil)
				var names []string
				for _, p := range got {
					names = append(names, p.Name)
					if tt.healthy != nil && (p.Healthy == nil || *p.Healthy != *tt.healthy) {
						t.Fatalf("got %q with healthy %v, want %v", p.Name, p.Healthy, *tt.healthy)
					}
				}
				if !reflect.DeepEqual(names, tt.want) {
					t.Fatalf("got %q, want %q", names, tt.want)
				}
				if total != int64(len(tt.want)) {
					t.Fatalf("got total %d, want %d", total, len(tt.want))
				}
			})
		}

		// Pages: two names at a time, in order, nothing twice, nothing missing.
		var walked []string
		for offset := 0; ; offset += 2 {
			page, total, err := s.ListRemoteParticipants(ctx, domain.RemoteParticipantFilter{
				Healthy: &no, Page: domain.Page{Offset: offset, Limit: 2},
			})
			wantErr(t, err, nil)
			if total != 4 {
				t.Fatalf("offset %d: got total %d, want 4", offset, total)
			}
			if len(page) == 0 {
				break
			}
			for _, p := range page {
				walked = append(walked, p.Name)
			}
		}
		if want := []string{"a_b", "ab", "abc", "pre_fix"}; !reflect.DeepEqual(walked, want) {
			t.Fatalf("got %q, want %q", walked, want)
		}
		_, _, err := s.ListRemoteParticipants(ctx, domain.RemoteParticipantFilter{})
		wantErr(t, err, domain.ErrInvalid)
	})
}
