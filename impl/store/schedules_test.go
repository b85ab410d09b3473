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

func newPrune(validator string) *domain.PruneSchedule {
	return &domain.PruneSchedule{
		Validator:       validator,
		Cron:            "0 0 3 * * ?",
		MaxDuration:     5 * time.Minute,
		Retention:       48 * time.Hour,
		MaxDurationText: "5m",
		RetentionText:   "48h",
	}
}

func wantPrune(t *testing.T, s *store.Store, want domain.PruneSchedule) {
	t.Helper()
	got, err := s.GetPruneSchedule(context.Background(), want.Validator)
	wantErr(t, err, nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n got %+v\nwant %+v", got, want)
	}
}

func TestPruneSchedule(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustCreateValidator(t, s, newValidator("v1"))

		_, err := s.GetPruneSchedule(ctx, "v1")
		wantErr(t, err, domain.ErrNotFound)

		p := newPrune("v1")
		wantErr(t, s.CreatePruneSchedule(ctx, p), nil)
		if p.CreatedAt.IsZero() || !p.UpdatedAt.Equal(p.CreatedAt) {
			t.Fatalf("got CreatedAt %v UpdatedAt %v, want both set and equal", p.CreatedAt, p.UpdatedAt)
		}
		wantPrune(t, s, *p)

		err = s.CreatePruneSchedule(ctx, newPrune("v1"))
		wantErr(t, err, domain.ErrConflict)
		if got, want := err.Error(), `prune schedule of validator "v1" already exists`; got != want {
			t.Fatalf("got message %q, want %q", got, want)
		}
		err = s.CreatePruneSchedule(ctx, newPrune("absent"))
		wantErr(t, err, domain.ErrNotFound)
		if got, want := err.Error(), `validator "absent" not found`; got != want {
			t.Fatalf("got message %q, want %q", got, want)
		}

		edit := domain.PruneSchedule{
			Validator: "v1", Cron: "0 30 1 * * ?",
			MaxDuration: 90 * time.Second, Retention: 7 * 24 * time.Hour,
			MaxDurationText: "90s", RetentionText: "168h",
		}
		wantErr(t, s.UpdatePruneSchedule(ctx, &edit), nil)
		if !edit.CreatedAt.Equal(p.CreatedAt) || edit.UpdatedAt.Before(p.UpdatedAt) {
			t.Fatalf("got CreatedAt %v UpdatedAt %v, want CreatedAt %v and a later UpdatedAt", edit.CreatedAt, edit.UpdatedAt, p.CreatedAt)
		}
		wantPrune(t, s, edit)
		wantErr(t, s.UpdatePruneSchedule(ctx, newPrune("absent")), domain.ErrNotFound)

		wantErr(t, s.DeletePruneSchedule(ctx, "v1"), nil)
		_, err = s.GetPruneSchedule(ctx, "v1")
		wantErr(t, err, domain.ErrNotFound)
		wantErr(t, s.DeletePruneSchedule(ctx, "v1"), nil) // idempotent
		wantErr(t, s.UpdatePruneSchedule(ctx, newPrune("v1")), domain.ErrNotFound)
	})
}

func TestSchedulesGoWithTheirValidator(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustCreateValidator(t, s, newValidator("gone"))
		mustCreateValidator(t, s, newValidator("kept"))
		for _, name := range []string{"gone", "kept"} {
			wantErr(t, s.CreatePruneSchedule(ctx, newPrune(name)), nil)
			wantErr(t, s.SaveBackupSchedule(ctx, &domain.BackupSchedule{Validator: name, Cron: "0 2 * * *", MaxBackups: 7}), nil)
			wantErr(t, s.RecordRun(ctx, &domain.Run{Validator: name, Kind: domain.RunBackup}), nil)
		}
		wantErr(t, s.DeleteValidator(ctx, "gone"), nil)

		for _, table := range []string{"prune_schedules", "backup_schedules", "runs"} {
			if n := count(t, s, "SELECT COUNT(*) FROM "+table+" WHERE validator = ?", "gone"); n != 0 {
				t.Fatalf("%s: got %d rows of the deleted validator, want 0", table, n)
			}
			if n := count(t, s, "SELECT COUNT(*) FROM "+table+" WHERE validator = ?", "kept"); n != 1 {
				t.Fatalf("%s: got %d rows of the other validator, want 1", table, n)
			}
		}
	})
}

// Foreign keys are a per-connection setting on SQLite: every pooled
// connection must enforce them, so writes on many connections at once must
// all be refused.
func TestForeignKeysOnEveryConnection(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		errs := run(20, func(i int) error {
			return s.CreatePruneSchedule(context.Background(), newPrune(fmt.Sprint("absent-", i)))
		})
		for _, err := range errs {
			wantErr(t, err, domain.ErrNotFound)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM prune_schedules"); n != 0 {
			t.Fatalf("got %d orphan schedules, want 0", n)
		}
	})
}

func wantBackup(t *testing.T, s *store.Store, want domain.BackupSchedule) {
	t.Helper()
	got, err := s.GetBackupSchedule(context.Background(), want.Validator)
	wantErr(t, err, nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n got %+v\nwant %+v", got, want)
	}
}

func TestBackupSchedule(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustCreateValidator(t, s, newValidator("v1"))

		_, err := s.GetBackupSchedule(ctx, "v1")
		wantErr(t, err, domain.ErrNotFound)
		wantErr(t, s.SoftDeleteBackupSchedule(ctx, "v1"), domain.ErrNotFound)
		wantErr(t, s.SaveBackupSchedule(ctx, &domain.BackupSchedule{Validator: "absent", Cron: "0 2 * * *", MaxBackups: 7}), domain.ErrNotFound)

		steps := []struct {
			name       string
			do         func() error
			cron       string
			maxBackups int32
			deleted    bool
		}{
			{"create", save(s, "v1", "0 2 * * *", 7), "0 2 * * *", 7, false},
			{"replace", save(s, "v1", "30 4 * * 1", 14), "30 4 * * 1", 14, false},
			{"soft delete", func() error { return s.SoftDeleteBackupSchedule(ctx, "v1") }, "30 4 * * 1", 14, true},
			{"reactivate", save(s, "v1", "0 5 * * *", 2), "0 5 * * *", 2, false},
			{"soft delete again", func() error { return s.SoftDeleteBackupSchedule(ctx, "v1") }, "0 5 * * *", 2, true},
		}
		var created time.Time
		for _, step := range steps {
			wantErr(t, step.do(), nil)
			got, err := s.GetBackupSchedule(ctx, "v1")
			wantErr(t, err, nil)
			if got.Cron != step.cron || got.MaxBackups != step.maxBackups || got.Deleted != step.deleted {
				t.Fatalf("%s: got %+v, want cron %q maxBackups %d deleted %v", step.name, got, step.cron, step.maxBackups, step.deleted)
			}
			if created.IsZero() {
				created = got.CreatedAt
			}
			if !got.CreatedAt.Equal(created) || got.UpdatedAt.Before(created) {
				t.Fatalf("%s: got CreatedAt %v UpdatedAt %v, want the first CreatedAt %v kept", step.name, got.CreatedAt, got.UpdatedAt, created)
			}
			deleted := count(t, s, "SELECT COUNT(*) FROM backup_schedules WHERE validator = ? AND deleted_at IS NOT NULL", "v1")
			if rows := count(t, s, "SELECT COUNT(*) FROM backup_schedules"); rows != 1 || (deleted == 1) != step.deleted {
				t.Fatalf("%s: got %d rows, %d with deleted_at, want 1 row, deleted %v", step.name, rows, deleted, step.deleted)
			}
		}
		// Only an active schedule can be deleted.
		wantErr(t, s.SoftDeleteBackupSchedule(ctx, "v1"), domain.ErrNotFound)

		b := domain.BackupSchedule{Validator: "v1", Cron: "15 1 * * *", MaxBackups: 84}
		wantErr(t, s.SaveBackupSchedule(ctx, &b), nil)
		if b.Deleted || !b.CreatedAt.Equal(created) {
			t.Fatalf("got %+v, want it active with CreatedAt %v", b, created)
		}
		wantBackup(t, s, b)

		// A hard delete removes the record, deleted or not, and is idempotent.
		wantErr(t, s.DeleteBackupSchedule(ctx, "v1"), nil)
		_, err = s.GetBackupSchedule(ctx, "v1")
		wantErr(t, err, domain.ErrNotFound)
		wantErr(t, s.DeleteBackupSchedule(ctx, "v1"), nil)
	})
}

func save(s *store.Store, validator, cron string, maxBackups int32) func() error {
	return func() error {
		return s.SaveBackupSchedule(context.Background(), &domain.BackupSchedule{Validator: validator, Cron: cron, MaxBackups: maxBackups})
	}
}

func TestSaveBackupScheduleConcurrent(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		mustCreateValidator(t, s, newValidator("v1"))
		errs := run(20, func(i int) error { return save(s, "v1", "0 2 * * *", int32(2+i))() })
		for _, err := range errs {
			wantErr(t, err, nil)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM backup_schedules"); n != 1 {
			t.Fatalf("got %d rows, want 1", n)
		}
	})
}

// TestCreateBackupSchedule: a create writes an absent or soft-deleted
// schedule, and refuses an active one unchanged; of concurrent creates
// exactly one writes, the others are conflicts.
func TestCreateBackupSchedule(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mustCreateValidator(t, s, newValidator("v1"))
		create := func(cron string, maxBackups int32) (domain.BackupSchedule, error) {
			b := domain.BackupSchedule{Validator: "v1", Cron: cron, MaxBackups: maxBackups}
			err := s.CreateBackupSchedule(ctx, &b)
			return b, err
		}
		wantErr(t, s.CreateBackupSchedule(ctx, &domain.BackupSchedule{Validator: "absent", Cron: "0 2 * * *", MaxBackups: 7}), domain.ErrNotFound)

		created, err := create("0 2 * * *", 7)
		wantErr(t, err, nil)
		if created.Cron != "0 2 * * *" || created.MaxBackups != 7 || created.Deleted || created.CreatedAt.IsZero() {
			t.Fatalf("absent: got %+v", created)
		}
		wantBackup(t, s, created)
		_, err = create("0 3 * * *", 9)
		wantErr(t, err, domain.ErrConflict)
		wantBackup(t, s, created)

		wantErr(t, s.SoftDeleteBackupSchedule(ctx, "v1"), nil)
		reactivated, err := create("0 4 * * *", 3)
		wantErr(t, err, nil)
		if reactivated.Cron != "0 4 * * *" || reactivated.MaxBackups != 3 || reactivated.Deleted || !reactivated.CreatedAt.Equal(created.CreatedAt) {
			t.Fatalf("soft-deleted: got %+v, want reactivated with the first create's created_at", reactivated)
		}
		wantBackup(t, s, reactivated)

		wantErr(t, s.SoftDeleteBackupSchedule(ctx, "v1"), nil)
		errs := run(20, func(i int) error { _, err := create("0 5 * * *", int32(2+i)); return err })
		wrote := 0
		for _, err := range errs {
			if err == nil {
				wrote++
			} else {
				wantErr(t, err, domain.ErrConflict)
			}
		}
		if wrote != 1 {
			t.Fatalf("concurrent creates: %d wrote, want 1", wrote)
		}
	})
}
