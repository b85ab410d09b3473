package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestSimulatedPhaseProgression(t *testing.T) {
	ctx := context.Background()
	clock := &simClock{now: simStart}
	s, err := cluster.OpenSimulatedWith(t.TempDir(), cluster.SimulatedOptions{
		Now: clock.Now, RunningAfter: time.Minute, CompletedAfter: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.4.1", nil)), domain.ValidatorSecrets{}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		after time.Duration
		want  domain.ValidatorState
	}{
		{0, domain.ValidatorState{Phase: domain.PhasePending}},
		{59 * time.Second, domain.ValidatorState{Phase: domain.PhasePending}},
		{time.Minute, domain.ValidatorState{Phase: domain.PhaseRunning, DatabaseRunning: true}},
		{3*time.Minute - time.Nanosecond, domain.ValidatorState{Phase: domain.PhaseRunning, DatabaseRunning: true}},
		{3 * time.Minute, domain.ValidatorState{Phase: domain.PhaseCompleted, DatabaseRunning: true}},
		{time.Hour, domain.ValidatorState{Phase: domain.PhaseCompleted, DatabaseRunning: true}},
	} {
		clock.Set(simStart.Add(step.after))
		got, err := s.ValidatorState(ctx, "v1")
		if err != nil || got != step.want {
			t.Errorf("after %s: got %+v, %v, want %+v", step.after, got, err, step.want)
		}
		all, _ := s.ValidatorStates(ctx)
		if all["v1"] != step.want {
			t.Errorf("ValidatorStates after %s: got %+v, want %+v", step.after, all["v1"], step.want)
		}
	}
	// An edit does not restart the validator.
	if err := s.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.5.0", nil)), domain.ValidatorSecrets{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ValidatorState(ctx, "v1"); got.Phase != domain.PhaseCompleted {
		t.Errorf("after an edit: got %s, want COMPLETED", got.Phase)
	}
}

func TestSimulatedPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := &simClock{now: simStart}
	opts := cluster.SimulatedOptions{Now: clock.Now}
	s, err := cluster.OpenSimulatedWith(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	steps := []error{
		s.AddSecret("pull", ".dockerconfigjson"),
		s.AddStorageClass("fast"),
		s.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.4.1", nil)), allSecrets()),
		s.SetDisableUserEdit("v1", true),
		s.ApplyPruneSchedule(ctx, "v1", &domain.PruneSchedule{Cron: "0 0 20 * * ?", MaxDurationText: "5m", RetentionText: "48h"}),
		s.ApplyBackupSchedule(ctx, domain.BackupSchedule{Validator: "v1", Cron: "0 3 * * *", MaxBackups: 4}),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("state.json mode: got %v, want 0600", info.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "state.json" {
			t.Errorf("directory holds %s, want state.json only (no temporary files left)", e.Name())
		}
	}

	clock.Set(simStart.Add(10 * time.Second))
	s2, err := cluster.OpenSimulatedWith(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s2.ValidatorState(ctx, "v1")
	if want := (domain.ValidatorState{Phase: domain.PhaseCompleted, DatabaseRunning: true, DisableUserEdit: true}); err != nil || st != want {
		t.Errorf("state after reopen: got %+v, %v, want %+v", st, err, want)
	}
	refs := domain.References{
		Secrets:        []domain.Reference{{Field: "a", Name: "pull"}, {Field: "b", Name: "v1-onboarding"}},
		SecretKeys:     []domain.SecretKeyReference{{Field: "c", Name: "v1-database", Key: "password"}},
		StorageClasses: []domain.Reference{{Field: "d", Name: "fast"}, {Field: "e", Name: "standard"}},
	}
	if err := s2.CheckReferences(ctx, refs); err != nil {
		t.Errorf("references after reopen: got %v, want nil", err)
	}
	f, raw := readSimFile(t, dir)
	if got := f.Validators["v1"].Spec["participantPruningSchedule"]; got == nil {
		t.Error("pruning schedule after reopen: got absent, want kept")
	}
	if c := f.CronJobs["v1-backup"]; c.Schedule != "0 3 * * *" || c.MaxBackups != 4 || c.Suspend {
		t.Errorf("cron job after reopen: got %+v", c)
	}
	if !slices.Equal(f.Secrets["v1-ledger-api-auth"], []string{"client-secret"}) {
		t.Errorf("secret keys: got %v, want [client-secret]", f.Secrets["v1-ledger-api-auth"])
	}
	for _, v := range []string{onboardingValue, clientSecret, dbPassword} {
		if strings.Contains(raw, v) {
			t.Error("state.json holds a secret value")
		}
	}
}

func TestSimulatedHelpers(t *testing.T) {
	s, err := cluster.OpenSimulated(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetDisableUserEdit("absent", true); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("SetDisableUserEdit on an absent validator: got %v, want ErrNotFound", err)
	}
	if err := s.AddSecret("", "k"); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("AddSecret without a name: got %v, want ErrInvalid", err)
	}
	if err := s.AddStorageClass("standard"); err != nil {
		t.Errorf("adding the seeded storage class again: got %v, want nil", err)
	}
	if _, err := cluster.OpenSimulatedWith(t.TempDir(), cluster.SimulatedOptions{RunningAfter: time.Minute, CompletedAfter: time.Second}); err == nil {
		t.Error("CompletedAfter before RunningAfter: got nil, want an error")
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "state.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.OpenSimulated(bad); err == nil {
		t.Error("opening a corrupt state.json: got nil, want an error")
	}
}
