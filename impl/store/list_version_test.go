package store_test

import (
	"context"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// TestListVersion: ListVersion (release 1.11's list ETag) moves with every
// change a page of validators would show, and only then.
func TestListVersion(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustCreateValidator(t, s, newValidator("shown"))
		edited := func(f func(v *domain.Validator)) func() error {
			return func() error {
				v, err := s.GetValidator(ctx, "shown")
				if err != nil {
					return err
				}
				f(&v)
				return s.UpdateValidator(ctx, &v)
			}
		}
		for _, step := range []struct {
			what  string
			do    func() error
			moves bool
		}{
			{"a create", func() error { return s.CreateValidator(ctx, newValidator("other")) }, true},
			// An edit rewrites the list view with the configuration (the
			// handlers do; the view is what a page shows of it).
			{"an edit of the configuration", edited(func(v *domain.Validator) {
				v.Spec, v.ListView = []byte(`{"imageTag":"0.4.9"}`), []byte(`{"imageTag":"0.4.9"}`)
			}), true},
			{"an edit of the migration", edited(func(v *domain.Validator) {
				v.MigrationID++
				v.ListView = []byte(`{"imageTag":"0.4.9","migrationId":"1"}`)
			}), true},
			{"the same row written again", edited(func(v *domain.Validator) {}), false},
			{"a phase", func() error {
				return s.SyncValidatorState(ctx, "shown", domain.ValidatorState{Phase: domain.PhaseRunning})
			}, true},
			{"the user-edit flag", func() error {
				return s.SyncValidatorState(ctx, "shown", domain.ValidatorState{Phase: domain.PhaseRunning, DisableUserEdit: true})
			}, true},
			{"the same state", func() error {
				return s.SyncValidatorState(ctx, "shown", domain.ValidatorState{Phase: domain.PhaseRunning, DisableUserEdit: true})
			}, false},
			{"a list view", func() error {
				v, err := s.GetValidator(ctx, "shown")
				if err != nil {
					return err
				}
				return s.SetListViews(ctx, []domain.ListViewUpdate{{Name: "shown", UpdatedAt: v.UpdatedAt, View: []byte(`{"imageTag":"x"}`), Version: 99}})
			}, true},
			{"a removal", func() error { return s.DeleteValidator(ctx, "other") }, true},
		} {
			before, err := s.ListVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := step.do(); err != nil {
				t.Fatalf("%s: %v", step.what, err)
			}
			after, err := s.ListVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if moved := after != before; moved != step.moves {
				t.Errorf("%s: version %d then %d: moved %v, want %v", step.what, before, after, moved, step.moves)
			}
		}
	})
}
