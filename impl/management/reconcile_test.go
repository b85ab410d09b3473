package management_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestReconcilerConverges: whatever happened to the cluster or the identity
// provider, one reconcile of every validator makes them what the database
// records.
func TestReconcilerConverges(t *testing.T) {
	e := start(t)
	ctx := context.Background()

	alpha := apitest.ValidatorPayload("alpha")
	alpha.ClusterConfig.ScheduledPrune = &managementapi.ScheduledValidatorPruneDto{Cron: "0 0 20 * * ?", MaxDuration: "5m", Retention: "48h"}
	if r, err := e.Management.CreateValidatorWithResponse(ctx, alpha); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", r.StatusCode(), err)
	}
	e.provisioned(t, "alpha")
	e.setStatus(t, "alpha", domain.PhaseRunning, true) // the database runs: backups may be scheduled
	if r, err := e.Management.CreateBackupScheduleWithResponse(ctx, "alpha", managementapi.ValidatorBackupDto{Cron: ptr("0 3 * * *"), MaxBackups: 4}); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("backup: %v %v", r.StatusCode(), err)
	}
	want := e.cluster(t).Validators["alpha"].Spec
	if want["participantPruningSchedule"] == nil {
		t.Fatalf("spec after create: got %v, want a pruning schedule", want)
	}
	row, _ := e.row(t, "alpha")

	tests := []struct {
		name  string
		drift func(t *testing.T)
	}{
		{"resource, secrets and CronJob deleted by hand", func(t *testing.T) {
			if err := e.sim.DeleteValidator(ctx, "alpha"); err != nil {
				t.Fatal(err)
			}
		}},
		{"resource edited by hand to another image and no pruning", func(t *testing.T) {
			stale := row
			var spec map[string]any
			json.Unmarshal(stale.Spec, &spec)
			spec["imageTag"] = "0.0.1"
			stale.Spec, _ = json.Marshal(spec)
			if err := e.sim.ApplyValidator(ctx, stale, nil, domain.WrittenSecrets{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"backup CronJob removed", func(t *testing.T) {
			if err := e.sim.ApplyBackupSchedule(ctx, "alpha", nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"backup CronJob suspended", func(t *testing.T) {
			if err := e.sim.ApplyBackupSchedule(ctx, "alpha", &domain.BackupSchedule{Validator: "alpha", Cron: "0 3 * * *", MaxBackups: 4, Deleted: true}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.drift(t)
			// The periodic pass reads the caches: let them see the drift.
			if err := e.Kube.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			e.reconcileAll(t)
			st := e.cluster(t)
			got := st.Validators["alpha"].Spec
			delete(got, "secrets") // values are not in the database: lost with a deleted Secret
			w := maps.Clone(want)
			delete(w, "secrets")
			if g, _ := json.Marshal(got); string(g) != string(mustJSON(t, w)) {
				t.Errorf("spec: got %s, want %s", g, mustJSON(t, w))
			}
			if j, ok := st.CronJobs["alpha-backup"]; !ok || j.Suspend || j.Schedule != "0 3 * * *" || j.MaxBackups != 4 {
				t.Errorf("backup CronJob: got %+v (present %v), want active 0 3 * * *, 4 backups", j, ok)
			}
		})
	}

	t.Run("a pass over a validator in step writes nothing", func(t *testing.T) {
		if err := e.Kube.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		versions := func() (string, string) {
			v, err := e.Kube.Validators().Get(ctx, "alpha", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cj, err := e.Kube.Core.BatchV1().CronJobs(e.Kube.Namespace).Get(ctx, "alpha-backup", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return v.GetResourceVersion(), cj.ResourceVersion
		}
		v1, c1 := versions()
		for range 3 {
			e.reconcileAll(t)
		}
		if v2, c2 := versions(); v1 != v2 || c1 != c2 {
			t.Errorf("resource versions: got %s/%s, want unchanged %s/%s", v2, c2, v1, c1)
		}
	})

	t.Run("managed resource without a record is removed", func(t *testing.T) {
		ghost := domain.Validator{Name: "ghost", Spec: []byte(`{}`)}
		if err := e.sim.ApplyValidator(ctx, ghost, nil, domain.WrittenSecrets{}); err != nil {
			t.Fatal(err)
		}
		if err := e.Kube.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		e.reconcileAll(t)
		if _, ok := e.cluster(t).Validators["ghost"]; ok {
			t.Error("ghost: got present, want removed")
		}
		if _, ok := e.cluster(t).Validators["alpha"]; !ok {
			t.Error("alpha: got removed, want kept")
		}
	})

	t.Run("resources of another installation, or unlabelled, are left alone", func(t *testing.T) {
		for name, labels := range map[string]map[string]string{
			"foreign":   {cluster.ManagedByLabel: cluster.ManagedBy, cluster.InstallationLabel: "another-installation"},
			"by-hand":   {cluster.ManagedByLabel: cluster.ManagedBy},
			"unmanaged": {},
		} {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": cluster.Group + "/" + cluster.Version, "kind": cluster.Kind, "spec": map[string]any{},
			}}
			obj.SetName(name)
			obj.SetLabels(labels)
			if _, err := e.Kube.Validators().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Kube.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		e.reconcileAll(t)
		for _, name := range []string{"foreign", "by-hand", "unmanaged"} {
			if _, ok := e.cluster(t).Validators[name]; !ok {
				t.Errorf("%s: got removed, want left alone", name)
			}
		}
	})

	t.Run("a backup schedule deleted in the database removes the CronJob", func(t *testing.T) {
		if err := e.App.Store.Exec(ctx, "DELETE FROM backup_schedules WHERE validator = 'alpha'"); err != nil {
			t.Fatal(err)
		}
		e.reconcile(t, "alpha")
		if _, ok := e.cluster(t).CronJobs["alpha-backup"]; ok {
			t.Error("backup CronJob: got present, want removed")
		}
	})
}

// TestReconcilerFinishesInterruptedCreates: what a leader killed after each
// step of a create leaves behind is finished, the wallet user adopted by
// its claim (one user, not two).
func TestReconcilerFinishesInterruptedCreates(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	for _, name := range []string{"row-only", "with-user"} {
		r, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload(name))
		if err != nil || r.StatusCode() != http.StatusCreated {
			t.Fatalf("create %s: %v %v", name, r.StatusCode(), err)
		}
	}
	e.reconcileAll(t)
	for _, name := range []string{"row-only", "with-user"} {
		e.provisioned(t, name)
	}
	if users := e.idpUsers(t); len(users) != 2 {
		t.Fatalf("wallet users: got %v, want one per validator", users)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestDriftUndoneByEvents: a hand edit of a validator's backup CronJob or
// the deletion of its database Secret is undone by the intent controller
// on the change's own event (the gateway's records tell it, once its reads
// show the change), with no periodic pass.
func TestDriftUndoneByEvents(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	payload := apitest.ValidatorPayload("drift")
	payload.DatabaseConfig.Password = nil // generated: made again when its Secret is gone
	if r, err := e.Management.CreateValidatorWithResponse(ctx, payload); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", r.StatusCode(), err)
	}
	e.provisioned(t, "drift")
	e.setStatus(t, "drift", domain.PhaseRunning, true)
	if r, err := e.Management.CreateBackupScheduleWithResponse(ctx, "drift", managementapi.ValidatorBackupDto{Cron: ptr("0 3 * * *"), MaxBackups: 4}); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("backup: %v %v", r.StatusCode(), err)
	}
	cronJobs, secrets := e.Kube.Core.BatchV1().CronJobs(e.Kube.Namespace), e.Kube.Core.CoreV1().Secrets(e.Kube.Namespace)
	apitest.Eventually(t, 10*time.Second, "backup CronJob made", func() error {
		_, err := cronJobs.Get(ctx, "drift-backup", metav1.GetOptions{})
		return err
	})
	tests := []struct {
		name   string
		drift  func() error
		undone func() error
	}{
		{"backup CronJob suspended and rescheduled by hand", func() error {
			cj, err := cronJobs.Get(ctx, "drift-backup", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cj.Spec.Suspend, cj.Spec.Schedule = ptr(true), "0 5 * * *"
			_, err = cronJobs.Update(ctx, cj, metav1.UpdateOptions{})
			return err
		}, func() error {
			cj, err := cronJobs.Get(ctx, "drift-backup", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cj.Spec.Suspend != nil && *cj.Spec.Suspend || cj.Spec.Schedule != "0 3 * * *" {
				return fmt.Errorf("suspend %v, schedule %q", cj.Spec.Suspend, cj.Spec.Schedule)
			}
			return nil
		}},
		{"database Secret deleted by hand", func() error {
			return secrets.Delete(ctx, domain.DatabaseSecretName("drift"), metav1.DeleteOptions{})
		}, func() error {
			s, err := secrets.Get(ctx, domain.DatabaseSecretName("drift"), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(s.Data[cluster.DatabaseSecretKey]) == 0 {
				return fmt.Errorf("no %s", cluster.DatabaseSecretKey)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Twice: a reconcile queued before the drift (the change feed's
			// of the backup schedule) may undo the first.
			for range 2 {
				if err := tt.drift(); err != nil {
					t.Fatal(err)
				}
				apitest.Eventually(t, 10*time.Second, "undone", tt.undone)
			}
		})
	}
}
