package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestEmbeddedPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cluster")
	clock := &simClock{now: simStart}
	opts := cluster.EmbeddedOptions{Namespace: "validators", Kubelet: cluster.KubeletOptions{Now: clock.Now}}
	c, err := cluster.OpenEmbedded(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	startKube(t, c.Start)
	steps := []error{
		c.AddSecret(ctx, "pull", map[string]string{".dockerconfigjson": "{}"}),
		c.AddStorageClass(ctx, "fast"),
		c.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.4.1", nil)), nil),
		c.WriteSecrets(ctx, "v1", allSecrets()),
		c.SetDisableUserEdit(ctx, "v1", true),
		c.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.4.1", nil)), &domain.PruneSchedule{Cron: "0 0 20 * * ?", MaxDurationText: "5m", RetentionText: "48h"}),
		c.ApplyBackupSchedule(ctx, "v1", &domain.BackupSchedule{Validator: "v1", Cron: "0 3 * * *", MaxBackups: 4}),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	before, err := c.Validators().Get(ctx, "v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, cluster.EmbeddedFile): 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s mode: got %v, want %v", path, got, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), cluster.EmbeddedFile) {
			t.Errorf("directory holds %s, want %s (and its journal) only", e.Name(), cluster.EmbeddedFile)
			continue
		}
		if info, _ := e.Info(); info != nil && info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s mode: got %v, want no access for group and others", e.Name(), info.Mode().Perm())
		}
	}
	// Secret data is in the file, as etcd holds it: that is why it is 0600.
	raw, err := os.ReadFile(filepath.Join(dir, cluster.EmbeddedFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "v1-database") {
		t.Errorf("%s holds no Secret v1-database after Close", cluster.EmbeddedFile)
	}

	clock.Set(simStart.Add(10 * time.Second))
	c2 := openEmbedded(t, dir, opts)
	if err := c2.Kubelet().Step(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := c2.ValidatorState(ctx, "v1")
	if want := (domain.ValidatorState{Phase: domain.PhaseCompleted, DatabaseRunning: true, DisableUserEdit: true}); err != nil || st != want {
		t.Errorf("state after reopen: got %+v, %v, want %+v", st, err, want)
	}
	refs := domain.References{
		Secrets:        []domain.Reference{{Field: "a", Name: "pull"}, {Field: "b", Name: "v1-onboarding"}},
		SecretKeys:     []domain.SecretKeyReference{{Field: "c", Name: "v1-database", Key: "password"}},
		StorageClasses: []domain.Reference{{Field: "d", Name: "fast"}, {Field: "e", Name: cluster.DefaultStorageClass}},
	}
	if err := c2.CheckReferences(ctx, refs); err != nil {
		t.Errorf("references after reopen: got %v, want nil", err)
	}
	after, err := c2.Validators().Get(ctx, "v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetUID() != before.GetUID() || !after.GetCreationTimestamp().Time.Equal(before.GetCreationTimestamp().Time) {
		t.Errorf("validator after reopen: got uid %s created %v, want %s %v", after.GetUID(), after.GetCreationTimestamp(), before.GetUID(), before.GetCreationTimestamp())
	}
	if rv := mustInt(t, after.GetResourceVersion()); rv <= mustInt(t, before.GetResourceVersion()) {
		t.Errorf("resourceVersion after the kubelet's write: got %d, want above %s (versions go on after reopen)", rv, before.GetResourceVersion())
	}
	if p, _ := after.Object["spec"].(map[string]any)["participantPruningSchedule"].(map[string]any); p["cron"] != "0 0 20 * * ?" {
		t.Errorf("pruning schedule after reopen: got %v", p)
	}
	cj, err := c2.Clientset().BatchV1().CronJobs("validators").Get(ctx, "v1-backup", metav1.GetOptions{})
	if err != nil || cj.Spec.Schedule != "0 3 * * *" {
		t.Errorf("cron job after reopen: got %v, %v", cj, err)
	}
	for name, want := range map[string]string{"v1-database": dbPassword, "v1-ledger-api-auth": clientSecret, "v1-onboarding": onboardingValue} {
		s, err := c2.Clientset().CoreV1().Secrets("validators").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("secret %s after reopen: %v", name, err)
			continue
		}
		for _, v := range s.Data {
			if string(v) != want {
				t.Errorf("secret %s after reopen: got another value, want the one written", name)
			}
		}
	}
	// Changes before the reopen are history no more: a watch from then
	// must relist (410 Gone), as with an API server whose watch cache moved on.
	if _, err := c2.Validators().Watch(ctx, metav1.ListOptions{ResourceVersion: "1"}); !apierrors.IsResourceExpired(err) {
		t.Errorf("watch from resourceVersion 1 after reopen: got %v, want 410 Expired", err)
	}
	// The informer of the reopened gateway lists what was stored.
	if err := c2.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := c2.ValidatorStates(ctx)
	if err != nil || all["v1"].Phase != domain.PhaseCompleted {
		t.Errorf("ValidatorStates after reopen: got %v, %v", all, err)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}

func TestEmbeddedOpenRefusals(t *testing.T) {
	if _, err := cluster.OpenEmbedded(t.TempDir(), cluster.EmbeddedOptions{Kubelet: cluster.KubeletOptions{RunningAfter: time.Minute, CompletedAfter: time.Second}}); err == nil {
		t.Error("CompletedAfter before RunningAfter: got nil, want an error")
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, cluster.EmbeddedFile), []byte("not a database, not at all, definitely not"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.OpenEmbedded(bad, cluster.EmbeddedOptions{}); err == nil {
		t.Error("opening a corrupt object store: got nil, want an error")
	}
}

// The embedded cluster behaves as an API server where client-go's fakes do
// not: stale updates conflict, status is a subresource, watches resume.
func TestEmbeddedAPISemantics(t *testing.T) {
	ctx := context.Background()
	c := openEmbedded(t, t.TempDir(), cluster.EmbeddedOptions{})
	if err := c.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.4.1", nil)), nil); err != nil {
		t.Fatal(err)
	}
	api := c.Validators()
	v, err := api.Get(ctx, "v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.GetUID() == "" || v.GetCreationTimestamp().Time.IsZero() || v.GetResourceVersion() == "" || v.GetGeneration() != 1 {
		t.Errorf("created validator: got uid %q created %v resourceVersion %q generation %d, want all set, generation 1",
			v.GetUID(), v.GetCreationTimestamp(), v.GetResourceVersion(), v.GetGeneration())
	}

	w, err := api.Watch(ctx, metav1.ListOptions{ResourceVersion: v.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// The main resource ignores status; the status subresource changes only status.
	withStatus := v.DeepCopy()
	withStatus.Object["status"] = map[string]any{"phase": "RUNNING"}
	withStatus.SetLabels(map[string]string{"extra": "x"})
	updated, err := api.Update(ctx, withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Object["status"] != nil || updated.GetLabels()["extra"] != "x" {
		t.Errorf("update of the main resource: got status %v labels %v, want no status, the new label", updated.Object["status"], updated.GetLabels())
	}
	if _, err := api.Update(ctx, v, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: got %v, want 409 Conflict", err)
	}
	st := updated.DeepCopy()
	st.Object["status"] = map[string]any{"phase": "RUNNING"}
	st.SetLabels(nil)
	st, err = api.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetLabels()["extra"] != "x" || st.Object["status"].(map[string]any)["phase"] != "RUNNING" || st.GetGeneration() != 1 {
		t.Errorf("status update: got labels %v status %v generation %d, want labels kept, RUNNING, generation 1", st.GetLabels(), st.Object["status"], st.GetGeneration())
	}
	if err := api.Delete(ctx, "v1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := api.Delete(ctx, "v1", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: got %v, want 404", err)
	}
	var got []string
	for ev := range w.ResultChan() {
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.(metav1.Object).GetResourceVersion()))
		if ev.Type == watch.Deleted {
			break
		}
	}
	base := mustInt(t, v.GetResourceVersion())
	want := []string{fmt.Sprintf("MODIFIED %d", base+1), fmt.Sprintf("MODIFIED %d", base+2), fmt.Sprintf("DELETED %d", base+3)}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("watch from resourceVersion %d: got %v, want %v", base, got, want)
	}

	// A watch that resumes gets what it missed, one event per object, with
	// the object as it is now.
	if err := c.ApplyValidator(ctx, validator(t, "v2", config("v2", "0.4.1", nil)), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.SetDisableUserEdit(ctx, "v2", true); err != nil {
		t.Fatal(err)
	}
	w2, err := api.Watch(ctx, metav1.ListOptions{ResourceVersion: v.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	got = nil
	for range 2 {
		ev := <-w2.ResultChan()
		m := ev.Object.(metav1.Object)
		got = append(got, fmt.Sprintf("%s %s %s", ev.Type, m.GetName(), m.GetResourceVersion()))
	}
	want = []string{fmt.Sprintf("DELETED v1 %d", base+3), fmt.Sprintf("ADDED v2 %d", base+5)}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("watch resumed from resourceVersion %d: got %v, want %v", base, got, want)
	}
}

func TestKubeletPhaseProgression(t *testing.T) {
	ctx := context.Background()
	clock := &simClock{now: simStart}
	c := openEmbedded(t, t.TempDir(), cluster.EmbeddedOptions{Kubelet: cluster.KubeletOptions{
		Now: clock.Now, RunningAfter: time.Minute, CompletedAfter: 3 * time.Minute,
	}})
	if err := c.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.4.1", nil)), nil); err != nil {
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
		if err := c.Kubelet().Step(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := c.ValidatorState(ctx, "v1")
		if err != nil || got != step.want {
			t.Errorf("after %s: got %+v, %v, want %+v", step.after, got, err, step.want)
		}
		if err := c.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		all, _ := c.ValidatorStates(ctx)
		if all["v1"] != step.want {
			t.Errorf("ValidatorStates after %s: got %+v, want %+v", step.after, all["v1"], step.want)
		}
	}
	// An edit does not restart the validator.
	if err := c.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.5.0", nil)), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Kubelet().Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ValidatorState(ctx, "v1"); got.Phase != domain.PhaseCompleted {
		t.Errorf("after an edit: got %s, want COMPLETED", got.Phase)
	}
}

// Run moves status on its own, on the wall clock.
func TestEmbeddedRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := openEmbedded(t, t.TempDir(), cluster.EmbeddedOptions{Kubelet: cluster.KubeletOptions{
		RunningAfter: time.Nanosecond, CompletedAfter: time.Nanosecond, Interval: 10 * time.Millisecond,
	}})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if err := c.ApplyValidator(ctx, validator(t, "v1", config("v1", "0.4.1", nil)), nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "phase under Run", func() (bool, string) {
		st, err := c.ValidatorState(ctx, "v1")
		return err == nil && st.Phase == domain.PhaseCompleted, fmt.Sprintf("%+v, %v", st, err)
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: got %v, want nil", err)
	}
}
