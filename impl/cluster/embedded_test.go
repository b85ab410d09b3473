package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/cluster/simcluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestEmbeddedPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cluster")
	clock := &simClock{now: simStart}
	opts := simcluster.Options{Namespace: "validators", Kubelet: simcluster.KubeletOptions{Now: clock.Now}}
	c, err := simcluster.Open(dir, opts)
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

	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, simcluster.File): 0o600} {
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
		if !strings.HasPrefix(e.Name(), simcluster.File) {
			t.Errorf("directory holds %s, want %s (and its journal) only", e.Name(), simcluster.File)
			continue
		}
		if info, _ := e.Info(); info != nil && info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s mode: got %v, want no access for group and others", e.Name(), info.Mode().Perm())
		}
	}
	// Secret data is in the file, as etcd holds it: that is why it is 0600.
	raw, err := os.ReadFile(filepath.Join(dir, simcluster.File))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "v1-database") {
		t.Errorf("%s holds no Secret v1-database after Close", simcluster.File)
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
		StorageClasses: []domain.Reference{{Field: "d", Name: "fast"}, {Field: "e", Name: simcluster.DefaultStorageClass}},
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
	if _, err := simcluster.Open(t.TempDir(), simcluster.Options{Kubelet: simcluster.KubeletOptions{RunningAfter: time.Minute, CompletedAfter: time.Second}}); err == nil {
		t.Error("CompletedAfter before RunningAfter: got nil, want an error")
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, simcluster.File), []byte("not a database, not at all, definitely not"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := simcluster.Open(bad, simcluster.Options{}); err == nil {
		t.Error("opening a corrupt object store: got nil, want an error")
	}
}

// The embedded cluster behaves as an API server where client-go's fakes do
// not: stale updates conflict, status is a subresource, watches resume.
func TestEmbeddedAPISemantics(t *testing.T) {
	ctx := context.Background()
	c := openEmbedded(t, t.TempDir(), simcluster.Options{})
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
	c := openEmbedded(t, t.TempDir(), simcluster.Options{Kubelet: simcluster.KubeletOptions{
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
	c := openEmbedded(t, t.TempDir(), simcluster.Options{Kubelet: simcluster.KubeletOptions{
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

// TestEmbeddedWatchList: the embedded cluster serves client-go's watch-list
// (what its informers use): the objects as initial events, then a bookmark
// at the current resourceVersion, then the changes, as an API server does.
func TestEmbeddedWatchList(t *testing.T) {
	ctx := context.Background()
	c := openEmbedded(t, t.TempDir(), simcluster.Options{Namespace: "validators"})
	for _, name := range []string{"v2", "v1", "v3"} {
		if err := c.ApplyValidator(ctx, validator(t, name, config(name, "0.4.1", nil)), nil); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.Validators().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	w, err := c.Validators().Watch(ctx, metav1.ListOptions{
		SendInitialEvents: &yes, AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		LabelSelector: cluster.ManagedByLabel + "=" + cluster.ManagedBy,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A change made while the initial events stream comes after them.
	if err := c.SetDisableUserEdit(ctx, "v2", true); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 5 {
		select {
		case ev := <-w.ResultChan():
			m := ev.Object.(metav1.Object)
			entry := fmt.Sprintf("%s %s %s", ev.Type, m.GetName(), m.GetResourceVersion())
			if ev.Type == watch.Bookmark {
				entry = fmt.Sprintf("%s %s %s", ev.Type, m.GetResourceVersion(), m.GetAnnotations()[metav1.InitialEventsAnnotationKey])
			}
			got = append(got, entry)
		case <-time.After(5 * time.Second):
			t.Fatalf("watch-list: got %v, then nothing", got)
		}
	}
	rv := mustInt(t, list.GetResourceVersion())
	want := []string{
		fmt.Sprintf("ADDED v1 %s", list.Items[0].GetResourceVersion()),
		fmt.Sprintf("ADDED v2 %s", list.Items[1].GetResourceVersion()),
		fmt.Sprintf("ADDED v3 %s", list.Items[2].GetResourceVersion()),
		fmt.Sprintf("BOOKMARK %d true", rv),
		fmt.Sprintf("MODIFIED v2 %d", rv+1),
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("watch-list: got %v, want %v", got, want)
	}
}

// TestEmbeddedListPages: a list with a limit pages as an API server's does;
// a continue token is good until the next change (then 410 Gone, and
// client-go's pager lists again in full).
func TestEmbeddedListPages(t *testing.T) {
	ctx := context.Background()
	c := openEmbedded(t, t.TempDir(), simcluster.Options{Namespace: "validators"})
	for _, name := range []string{"v1", "v2", "v3"} {
		if err := c.ApplyValidator(ctx, validator(t, name, config(name, "0.4.1", nil)), nil); err != nil {
			t.Fatal(err)
		}
	}
	names := func(items []unstructured.Unstructured) (out []string) {
		for _, it := range items {
			out = append(out, it.GetName())
		}
		return out
	}
	first, err := c.Validators().List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(first.Items); !slices.Equal(got, []string{"v1", "v2"}) || first.GetContinue() == "" {
		t.Fatalf("first page: got %v continue %q, want [v1 v2] and a continue token", got, first.GetContinue())
	}
	second, err := c.Validators().List(ctx, metav1.ListOptions{Limit: 2, Continue: first.GetContinue()})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(second.Items); !slices.Equal(got, []string{"v3"}) || second.GetContinue() != "" {
		t.Fatalf("second page: got %v continue %q, want [v3] and no continue token", got, second.GetContinue())
	}
	if err := c.SetDisableUserEdit(ctx, "v1", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Validators().List(ctx, metav1.ListOptions{Limit: 2, Continue: first.GetContinue()}); !apierrors.IsResourceExpired(err) {
		t.Errorf("continue after a change: got %v, want 410 Expired", err)
	}
	if _, err := c.Validators().List(ctx, metav1.ListOptions{Limit: 2, Continue: "not a token"}); !apierrors.IsBadRequest(err) {
		t.Errorf("continue with a malformed token: got %v, want 400", err)
	}
}

// TestEmbeddedViewAfterChanges: release 2.0's list and objects are the
// same bytes, and a list already handed out does not change when an object
// does (the view's entries move into the list it builds).
func TestEmbeddedViewAfterChanges(t *testing.T) {
	ctx := context.Background()
	c := openEmbedded(t, t.TempDir(), simcluster.Options{Namespace: "validators"})
	for _, name := range []string{"v1", "v2", "v3"} {
		if err := c.ApplyValidator(ctx, validator(t, name, config(name, "0.4.1", nil)), nil); err != nil {
			t.Fatal(err)
		}
	}
	items := func(raw []byte) []json.RawMessage {
		t.Helper()
		var out []json.RawMessage
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	check := func(list []byte) {
		t.Helper()
		for i, name := range []string{"v1", "v2", "v3"} {
			obj, err := c.ResourceObject(domain.KindValidator, name)
			if err != nil {
				t.Fatal(err)
			}
			if got := items(list)[i]; string(got) != string(obj) {
				t.Errorf("%s in the list: got %s, want the object's bytes %s", name, got, obj)
			}
		}
	}
	if err := c.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := c.ResourceList(domain.KindValidator)
	if err != nil {
		t.Fatal(err)
	}
	kept := string(before)
	check(before)

	u, err := c.Validators().Get(ctx, "v2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"phase": "RUNNING"}
	if _, err := c.Validators().UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := c.ResourceStatus(domain.KindValidator, "v2"); err != nil || string(st) != `{"phase":"RUNNING"}` {
		t.Errorf("status after the change: got %s %v, want {\"phase\":\"RUNNING\"}", st, err)
	}
	after, err := c.ResourceList(domain.KindValidator)
	if err != nil {
		t.Fatal(err)
	}
	check(after)
	if string(before) != kept {
		t.Error("the list handed out before the change changed")
	}
	was, now := items(before), items(after)
	if string(was[0]) != string(now[0]) || string(was[2]) != string(now[2]) || string(was[1]) == string(now[1]) {
		t.Errorf("after a change of v2: got v1, v3 changed %v, %v and v2 changed %v, want only v2 changed",
			string(was[0]) != string(now[0]), string(was[2]) != string(now[2]), string(was[1]) != string(now[1]))
	}
}

// TestEmbeddedInStepOwner: a backup CronJob owned by an earlier Validator
// of the same name (deleted by hand, then written again) is not in step.
func TestEmbeddedInStepOwner(t *testing.T) {
	ctx := context.Background()
	c := openEmbedded(t, t.TempDir(), simcluster.Options{Namespace: "validators"})
	v := validator(t, "v1", config("v1", "0.4.1", nil))
	in := domain.ValidatorIntent{Validator: v, Backup: &domain.BackupSchedule{Validator: "v1", Cron: "0 3 * * *", MaxBackups: 7}}
	apply := func() {
		t.Helper()
		if err := c.ApplyValidator(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.ApplyBackupSchedule(ctx, "v1", in.Backup); err != nil {
			t.Fatal(err)
		}
		if err := c.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	apply()
	if !c.InStep(in) {
		t.Fatal("after apply: got not in step, want in step")
	}
	if err := c.Validators().Delete(ctx, "v1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyValidator(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if c.InStep(in) {
		t.Error("CronJob owned by the deleted Validator: got in step, want not")
	}
	apply()
	if !c.InStep(in) {
		t.Error("after the CronJob's owner is the new Validator: got not in step, want in step")
	}
}
