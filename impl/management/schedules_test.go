package management_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestPruneScheduleStates walks the document's state table of the pruning
// schedule, row by row, checking the answer, what GET then shows and what
// the Validator resource carries.
func TestPruneScheduleStates(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	if resp, err := e.Management.CreateValidatorWithResponse(ctx, customAuth(apitest.ValidatorPayload("eta"))); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", resp.StatusCode(), err)
	}
	daily := managementapi.ScheduledValidatorPruneDto{Cron: "0 0 20 * * ?", MaxDuration: "5m", Retention: "48h"}
	weekly := managementapi.ScheduledValidatorPruneDto{Cron: "0 0 8 ? * SAT", MaxDuration: "1h", Retention: "30d"}
	rows := []struct {
		name   string
		do     func() (int, error)
		status int
		// want is the schedule GET shows afterwards; nil = none ({}).
		want *managementapi.ScheduledValidatorPruneDto
		// next is the expected nextRun (the clock is 2026-11-22T18:36:00Z).
		next string
	}{
		{"absent: GET is {}", nil, 0, nil, ""},
		{"absent: PUT -> 404, still absent", func() (int, error) {
			r, err := e.Management.UpdatePruneScheduleWithResponse(ctx, "eta", daily)
			return r.StatusCode(), err
		}, http.StatusNotFound, nil, ""},
		{"absent: DELETE -> 204 no-op", func() (int, error) {
			r, err := e.Management.DeletePruneScheduleWithResponse(ctx, "eta")
			return r.StatusCode(), err
		}, http.StatusNoContent, nil, ""},
		{"absent: POST -> 201 present", func() (int, error) {
			r, err := e.Management.CreatePruneScheduleWithResponse(ctx, "eta", daily)
			return r.StatusCode(), err
		}, http.StatusCreated, &daily, "2026-11-22T20:00:00Z"},
		{"present: POST -> 409 unchanged", func() (int, error) {
			r, err := e.Management.CreatePruneScheduleWithResponse(ctx, "eta", weekly)
			return r.StatusCode(), err
		}, http.StatusConflict, &daily, "2026-11-22T20:00:00Z"},
		{"present: PUT -> 204 replaced", func() (int, error) {
			r, err := e.Management.UpdatePruneScheduleWithResponse(ctx, "eta", weekly)
			return r.StatusCode(), err
		}, http.StatusNoContent, &weekly, "2026-11-28T08:00:00Z"},
		{"present: DELETE -> 204 absent", func() (int, error) {
			r, err := e.Management.DeletePruneScheduleWithResponse(ctx, "eta")
			return r.StatusCode(), err
		}, http.StatusNoContent, nil, ""},
	}
	for _, row := range rows {
		if row.do != nil {
			st, err := row.do()
			if err != nil {
				t.Fatal(err)
			}
			if st != row.status {
				t.Fatalf("%s: got %d, want %d", row.name, st, row.status)
			}
		}
		resp, err := e.Management.GetPruneScheduleWithResponse(ctx, "eta")
		if err != nil || resp.StatusCode() != http.StatusOK {
			t.Fatalf("%s: GET got %d %v", row.name, resp.StatusCode(), err)
		}
		got := resp.JSON200
		spec := e.cluster(t).Validators["eta"].Spec
		inCluster, present := spec["participantPruningSchedule"].(map[string]any)
		if row.want == nil {
			if got.Cron != nil || got.NextRun != nil || string(resp.Body) != "{}\n" && string(resp.Body) != "{}" {
				t.Fatalf("%s: GET got %s, want {}", row.name, resp.Body)
			}
			if present {
				t.Fatalf("%s: resource still has %v", row.name, inCluster)
			}
			continue
		}
		if *got.Cron != row.want.Cron || *got.MaxDuration != row.want.MaxDuration || *got.Retention != row.want.Retention {
			t.Fatalf("%s: GET got %s, want %+v", row.name, resp.Body, *row.want)
		}
		if got.NextRun == nil || got.NextRun.UTC().Format(time.RFC3339) != row.next {
			t.Fatalf("%s: nextRun got %v, want %s", row.name, got.NextRun, row.next)
		}
		if want := map[string]any{"cron": row.want.Cron, "maxDuration": row.want.MaxDuration, "retention": row.want.Retention}; fmt.Sprint(inCluster) != fmt.Sprint(want) {
			t.Fatalf("%s: resource schedule got %v, want %v", row.name, inCluster, want)
		}
	}

	// Canton's parser needs a "?" in one day field; the API does not. The
	// caller's form is returned, Canton's is written to the resource.
	every := managementapi.ScheduledValidatorPruneDto{Cron: "0 30 * * * *", MaxDuration: "5m", Retention: "48h"}
	if r, err := e.Management.CreatePruneScheduleWithResponse(ctx, "eta", every); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create %q: got %d %v", every.Cron, r.StatusCode(), err)
	}
	if r, _ := e.Management.GetPruneScheduleWithResponse(ctx, "eta"); *r.JSON200.Cron != every.Cron {
		t.Fatalf("GET cron: got %q, want %q", *r.JSON200.Cron, every.Cron)
	}
	if got := e.cluster(t).Validators["eta"].Spec["participantPruningSchedule"].(map[string]any)["cron"]; got != "0 30 * * * ?" {
		t.Fatalf("resource cron: got %v, want Canton's form 0 30 * * * ?", got)
	}
	if r, _ := e.Management.DeletePruneScheduleWithResponse(ctx, "eta"); r.StatusCode() != http.StatusNoContent {
		t.Fatal("delete")
	}

	// Bad payloads: 400 keyed by field; unknown validators: 404.
	bad := []struct {
		dto   managementapi.ScheduledValidatorPruneDto
		field string
	}{
		{managementapi.ScheduledValidatorPruneDto{Cron: "0 61 * * * ?", MaxDuration: "5m", Retention: "1h"}, "cron"},
		{managementapi.ScheduledValidatorPruneDto{Cron: "0 0 20 * * ?", MaxDuration: "0s", Retention: "1h"}, "maxDuration"},
		{managementapi.ScheduledValidatorPruneDto{Cron: "0 0 20 * * ?", MaxDuration: "5m", Retention: "0m"}, "retention"},
	}
	for _, b := range bad {
		r, err := e.Management.CreatePruneScheduleWithResponse(ctx, "eta", b.dto)
		if err != nil {
			t.Fatal(err)
		}
		if body := errorMap(t, r.Body); r.StatusCode() != http.StatusBadRequest || body[b.field] == "" {
			t.Errorf("%+v: got %d %v, want 400 keyed %s", b.dto, r.StatusCode(), body, b.field)
		}
	}
	for name, call := range map[string]func() (int, error){
		"GET": func() (int, error) {
			r, err := e.Management.GetPruneScheduleWithResponse(ctx, "nobody")
			return r.StatusCode(), err
		},
		"DELETE": func() (int, error) {
			r, err := e.Management.DeletePruneScheduleWithResponse(ctx, "nobody")
			return r.StatusCode(), err
		},
		"POST": func() (int, error) {
			r, err := e.Management.CreatePruneScheduleWithResponse(ctx, "nobody", daily)
			return r.StatusCode(), err
		},
	} {
		if st, err := call(); err != nil || st != http.StatusNotFound {
			t.Errorf("%s of an unknown validator: got %d %v, want 404", name, st, err)
		}
	}

	// A schedule is recorded while the cluster refuses it, and reaches the
	// Validator resource once the cluster accepts.
	e.faults.failBefore("cluster.ApplyValidator")
	if r, _ := e.Management.CreatePruneScheduleWithResponse(ctx, "eta", daily); r.StatusCode() != http.StatusCreated {
		t.Fatalf("POST while the cluster refuses: got %d, want 201", r.StatusCode())
	}
	// The running intent controller reconciles beside this test's calls: a
	// reconcile of it that read the row before the POST may apply the old
	// spec after the test's own apply, and one of the test's then finds its
	// cache still showing the schedule and writes nothing. Either is set
	// right by the next reconcile, which the resource's own event brings:
	// the resource converges, as a controller's does, rather than at once
	// (failed once beside a second make test). e.cluster reconciles every
	// validator before it reads.
	e.faults.clear()
	apitest.Eventually(t, 10*time.Second, "the pruning schedule on the resource once the cluster accepts it", func() error {
		if e.cluster(t).Validators["eta"].Spec["participantPruningSchedule"] == nil {
			return errors.New("the resource has no pruning schedule")
		}
		return nil
	})
}

// TestBackupScheduleStates walks the backup schedule's state table.
func TestBackupScheduleStates(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	theta := customAuth(apitest.ValidatorPayload("theta"))
	theta.ClusterConfig.PvcVolumeStorageClass = ptr("standard")
	if resp, err := e.Management.CreateValidatorWithResponse(ctx, theta); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", resp.StatusCode(), err)
	}
	post := func(dto managementapi.ValidatorBackupDto) (int, *managementapi.ScheduledValidatorBackupDto, map[string]string) {
		t.Helper()
		r, err := e.Management.CreateBackupScheduleWithResponse(ctx, "theta", dto)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON201 != nil {
			return r.StatusCode(), r.JSON201, nil
		}
		return r.StatusCode(), nil, errorMap(t, r.Body)
	}
	getStatus := func() int {
		t.Helper()
		r, err := e.Management.GetBackupScheduleWithResponse(ctx, "theta")
		if err != nil {
			t.Fatal(err)
		}
		return r.StatusCode()
	}
	cronJob := func() (schedule string, suspended, exists bool) {
		e.reconcile(t, "theta") // what the controller makes of the record
		j, ok := e.cluster(t).CronJobs["theta-backup"]
		return j.Schedule, j.Suspend, ok
	}

	// absent -> active needs the internal database running: PENDING -> 503.
	if st, _, body := post(managementapi.ValidatorBackupDto{MaxBackups: 7}); st != http.StatusServiceUnavailable || body["error"] == "" {
		t.Fatalf("database not running: got %d %v, want 503", st, body)
	}
	if st := getStatus(); st != http.StatusNotFound {
		t.Fatalf("after 503: GET got %d, want 404 (nothing stored)", st)
	}
	if _, _, exists := cronJob(); exists {
		t.Fatal("after 503: a CronJob exists")
	}

	e.setStatus(t, "theta", domain.PhaseRunning, true) // RUNNING: the database runs
	st, got, body := post(managementapi.ValidatorBackupDto{MaxBackups: 7})
	if st != http.StatusCreated {
		t.Fatalf("absent -> active: got %d %v, want 201", st, body)
	}
	// Default cron: daily at midnight UTC; nextRun is that instant in unix seconds.
	midnight := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC).Unix()
	if got.Cron != "0 0 * * *" || *got.MaxBackups != 7 || *got.NextRun != strconv.FormatInt(midnight, 10) {
		t.Fatalf("got %+v (nextRun %s), want cron 0 0 * * *, 7 backups, nextRun %d", *got, *got.NextRun, midnight)
	}
	if sched, suspended, ok := cronJob(); !ok || sched != "0 0 * * *" || suspended {
		t.Fatalf("CronJob: got %q suspended %v exists %v, want an active daily job", sched, suspended, ok)
	}
	// The volume takes the validator's storage class (read from spec.config).
	if v := e.cluster(t).Volumes["theta-backups"]; v.StorageClass != "standard" {
		t.Fatalf("backup volume: got storage class %q, want standard", v.StorageClass)
	}
	if st, _, _ := post(managementapi.ValidatorBackupDto{MaxBackups: 7}); st != http.StatusConflict {
		t.Fatalf("active: POST got %d, want 409", st)
	}

	// active: PUT replaces cron and retention (200).
	put, err := e.Management.UpdateBackupScheduleWithResponse(ctx, "theta", managementapi.ValidatorBackupDto{Cron: ptr("30 2 * * 1"), MaxBackups: 14})
	if err != nil || put.StatusCode() != http.StatusOK || put.JSON200.Cron != "30 2 * * 1" || *put.JSON200.MaxBackups != 14 {
		t.Fatalf("active: PUT got %d %s, want 200 with the new schedule", put.StatusCode(), put.Body)
	}
	if sched, _, _ := cronJob(); sched != "30 2 * * 1" {
		t.Fatalf("CronJob after PUT: got %q", sched)
	}

	// active: DELETE -> soft-deleted (record kept, job suspended).
	if r, _ := e.Management.DeleteBackupScheduleWithResponse(ctx, "theta"); r.StatusCode() != http.StatusNoContent {
		t.Fatalf("active: DELETE got %d, want 204", r.StatusCode())
	}
	if _, suspended, ok := cronJob(); !ok || !suspended {
		t.Fatal("after DELETE: want the CronJob kept and suspended")
	}
	if st := getStatus(); st != http.StatusNotFound {
		t.Fatalf("soft-deleted: GET got %d, want 404", st)
	}
	if r, _ := e.Management.DeleteBackupScheduleWithResponse(ctx, "theta"); r.StatusCode() != http.StatusNotFound {
		t.Fatalf("soft-deleted: DELETE got %d, want 404", r.StatusCode())
	}

	// soft-deleted: POST reactivates (201), with no database condition.
	st, got, body = post(managementapi.ValidatorBackupDto{Cron: ptr("@daily"), MaxBackups: 3})
	if st != http.StatusCreated || got.Cron != "@daily" {
		t.Fatalf("soft-deleted: POST got %d %v %v, want 201 reactivated", st, got, body)
	}
	if _, suspended, _ := cronJob(); suspended {
		t.Fatal("after reactivation: the CronJob is still suspended")
	}
	// soft-deleted: PUT also reactivates (200).
	if r, _ := e.Management.DeleteBackupScheduleWithResponse(ctx, "theta"); r.StatusCode() != http.StatusNoContent {
		t.Fatal("DELETE before PUT failed")
	}
	if r, _ := e.Management.UpdateBackupScheduleWithResponse(ctx, "theta", managementapi.ValidatorBackupDto{MaxBackups: 2}); r.StatusCode() != http.StatusOK || r.JSON200.Cron != "0 0 * * *" {
		t.Fatalf("soft-deleted: PUT got %d %s, want 200 with the default cron", r.StatusCode(), r.Body)
	}
	if st := getStatus(); st != http.StatusOK {
		t.Fatalf("after PUT reactivation: GET got %d, want 200", st)
	}

	// A bad cron is 400 keyed cron; the schedule is unchanged.
	if st, _, body := post(managementapi.ValidatorBackupDto{Cron: ptr("61 * * * *"), MaxBackups: 7}); st != http.StatusBadRequest || body["cron"] == "" {
		t.Fatalf("bad cron: got %d %v, want 400 keyed cron", st, body)
	}

	// External database: 400, nothing stored; unknown validators: 404.
	ext := customAuth(apitest.ValidatorPayload("iota"))
	ext.DatabaseConfig = &managementapi.ValidatorDbConfigDto{External: ptr(true), Hostname: ptr("db.example.com"), Port: ptr("5432")}
	if r, err := e.Management.CreateValidatorWithResponse(ctx, ext); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create external: %v %v", r.StatusCode(), err)
	}
	// Its edits keep the external database's address required.
	if r, _ := e.Management.UpdateValidatorWithBodyWithResponse(ctx, "application/json", strings.NewReader(`{"name":"iota","databaseConfig":{"username":"u"}}`)); r.StatusCode() != http.StatusBadRequest || errorMap(t, r.Body)["databaseConfig.hostname"] == "" {
		t.Fatalf("external database without host on edit: got %d %s, want 400 keyed databaseConfig.hostname", r.StatusCode(), r.Body)
	}
	r, err := e.Management.CreateBackupScheduleWithResponse(ctx, "iota", managementapi.ValidatorBackupDto{MaxBackups: 7})
	if err != nil || r.StatusCode() != http.StatusBadRequest || !containsAny(errorMap(t, r.Body), "external database") {
		t.Fatalf("external database: got %d %s, want 400", r.StatusCode(), r.Body)
	}
	if r, _ := e.Management.GetBackupScheduleWithResponse(ctx, "nobody"); r.StatusCode() != http.StatusNotFound {
		t.Fatalf("unknown validator: got %d, want 404", r.StatusCode())
	}
	if r, _ := e.Management.UpdateBackupScheduleWithResponse(ctx, "iota", managementapi.ValidatorBackupDto{MaxBackups: 7}); r.StatusCode() != http.StatusBadRequest {
		t.Fatalf("PUT for an external database: got %d, want 400", r.StatusCode())
	}

	// A schedule is recorded while the cluster refuses its CronJob, which
	// appears once the cluster accepts.
	if r, err := e.Management.CreateValidatorWithResponse(ctx, customAuth(apitest.ValidatorPayload("kappa"))); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatal("create kappa")
	}
	e.setStatus(t, "kappa", domain.PhaseRunning, true)
	e.faults.failBefore("cluster.ApplyBackupSchedule")
	if r, _ := e.Management.CreateBackupScheduleWithResponse(ctx, "kappa", managementapi.ValidatorBackupDto{MaxBackups: 7}); r.StatusCode() != http.StatusCreated {
		t.Fatalf("POST while the cluster refuses: got %d, want 201", r.StatusCode())
	}
	e.faults.clear()
	e.reconcile(t, "kappa")
	if _, ok := e.cluster(t).CronJobs["kappa-backup"]; !ok {
		t.Fatal("the backup CronJob did not appear once the cluster accepted it")
	}
}

// TestBackupScheduleConcurrentCreates: of two POSTs that both find the
// schedule absent (or soft-deleted) before either writes, one creates it
// (201) and the other finds it active (409), as if they had come one after
// the other; the schedule is the one the 201 answered. Before, both were
// 201 and the later write replaced the earlier one's cron and retention.
func TestBackupScheduleConcurrentCreates(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	if r, err := e.Management.CreateValidatorWithResponse(ctx, customAuth(apitest.ValidatorPayload("lambda"))); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", r.StatusCode(), err)
	}
	e.setStatus(t, "lambda", domain.PhaseRunning, true)
	for _, state := range []string{"absent", "soft-deleted"} {
		var other *managementapi.CreateBackupScheduleResponse
		e.faults.afterNext("store.GetBackupSchedule", func() { // the first POST has read the schedule
			var err error
			other, err = e.Management.CreateBackupScheduleWithResponse(ctx, "lambda", managementapi.ValidatorBackupDto{Cron: ptr("0 3 * * *"), MaxBackups: 5})
			if err != nil {
				t.Error(err)
			}
		})
		first, err := e.Management.CreateBackupScheduleWithResponse(ctx, "lambda", managementapi.ValidatorBackupDto{Cron: ptr("0 1 * * *"), MaxBackups: 9})
		if err != nil || other == nil {
			t.Fatalf("%s: %v", state, err)
		}
		if other.StatusCode() != http.StatusCreated || first.StatusCode() != http.StatusConflict {
			t.Errorf("%s: the POST that wrote first got %d, the one that read first %d %s; want 201 and 409", state, other.StatusCode(), first.StatusCode(), first.Body)
		}
		got, err := e.Management.GetBackupScheduleWithResponse(ctx, "lambda")
		if err != nil || got.JSON200 == nil || got.JSON200.Cron != "0 3 * * *" || *got.JSON200.MaxBackups != 5 {
			t.Errorf("%s: GET got %d %s, want the schedule the 201 answered (0 3 * * *, 5)", state, got.StatusCode(), got.Body)
		}
		if r, err := e.Management.DeleteBackupScheduleWithResponse(ctx, "lambda"); err != nil || r.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE: %v %v", r.StatusCode(), err)
		}
	}
}

func containsAny(m map[string]string, substr string) bool {
	for _, v := range m {
		if strings.Contains(v, substr) {
			return true
		}
	}
	return false
}
