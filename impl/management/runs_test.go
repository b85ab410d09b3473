package management_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestListValidatorRuns(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	if resp, err := e.Management.CreateValidatorWithResponse(ctx, customAuth(apitest.ValidatorPayload("theta"))); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", resp.StatusCode(), err)
	}
	// The contract tests' cluster has no Job controller: the runs are
	// recorded as the run controller records them.
	base := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	yes, no := true, false
	observe := func(uid string, kind domain.RunKind, started time.Duration, finished *time.Duration, ok *bool, message string) managementapi.RunDto {
		t.Helper()
		r := domain.Run{Validator: "theta", Kind: kind, StartedAt: base.Add(started), JobUID: uid, Succeeded: ok, Message: message}
		if finished != nil {
			at := base.Add(*finished)
			r.FinishedAt = &at
		}
		if err := e.App.Store.ObserveRun(ctx, &r); err != nil {
			t.Fatal(err)
		}
		dto := managementapi.RunDto{Id: r.ID, Kind: managementapi.RunKind(map[domain.RunKind]string{domain.RunBackup: "BACKUP", domain.RunPrune: "PRUNE"}[kind]), StartedAt: r.StartedAt, Outcome: managementapi.RunRunning}
		if r.FinishedAt != nil {
			dto.FinishedAt = r.FinishedAt
			dto.Outcome = map[bool]managementapi.RunOutcome{true: managementapi.RunSucceeded, false: managementapi.RunFailed}[*ok]
		}
		if message != "" {
			dto.Message = ptr(message)
		}
		return dto
	}
	minute := func(n int) *time.Duration { d := time.Duration(n) * time.Minute; return &d }
	b1 := observe("job-b1", domain.RunBackup, time.Hour, minute(61), &yes, "")
	b2 := observe("job-b2", domain.RunBackup, 2*time.Hour, minute(125), &no, "BackoffLimitExceeded: Job has reached the specified backoff limit")
	p1 := observe("job-p1", domain.RunPrune, 3*time.Hour, minute(200), &yes, "")
	b3 := observe("job-b3", domain.RunBackup, 4*time.Hour, nil, nil, "")

	tests := []struct {
		name   string
		params managementapi.ListValidatorRunsParams
		want   []managementapi.RunDto
		total  int64
	}{
		{"every kind, default page", managementapi.ListValidatorRunsParams{}, []managementapi.RunDto{b3, p1, b2, b1}, 4},
		{"backups", managementapi.ListValidatorRunsParams{Kind: ptr(managementapi.RunKindBackup)}, []managementapi.RunDto{b3, b2, b1}, 3},
		{"prunes", managementapi.ListValidatorRunsParams{Kind: ptr(managementapi.RunKindPrune)}, []managementapi.RunDto{p1}, 1},
		{"first page", managementapi.ListValidatorRunsParams{Limit: ptr[int32](2)}, []managementapi.RunDto{b3, p1}, 4},
		{"second page", managementapi.ListValidatorRunsParams{From: ptr[int32](2), Limit: ptr[int32](2)}, []managementapi.RunDto{b2, b1}, 4},
		{"past the end", managementapi.ListValidatorRunsParams{From: ptr[int32](4)}, []managementapi.RunDto{}, 4},
		{"backups, second page", managementapi.ListValidatorRunsParams{Kind: ptr(managementapi.RunKindBackup), From: ptr[int32](1), Limit: ptr[int32](1)}, []managementapi.RunDto{b2}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := e.Management.ListValidatorRunsWithResponse(ctx, "theta", &tt.params)
			if err != nil || r.StatusCode() != http.StatusOK {
				t.Fatalf("got %d %v %s, want 200", r.StatusCode(), err, r.Body)
			}
			if got := r.JSON200; got.TotalCount != tt.total || !reflect.DeepEqual(got.Runs, tt.want) {
				t.Fatalf("got %d %+v\nwant %d %+v", got.TotalCount, got.Runs, tt.total, tt.want)
			}
		})
	}

	// A Job observed again changes its run; no second run appears.
	observe("job-b3", domain.RunBackup, 4*time.Hour, minute(242), &yes, "")
	r, err := e.Management.ListValidatorRunsWithResponse(ctx, "theta", &managementapi.ListValidatorRunsParams{Limit: ptr[int32](1)})
	if err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("got %d %v, want 200", r.StatusCode(), err)
	}
	if got := r.JSON200; got.TotalCount != 4 || got.Runs[0].Id != b3.Id || got.Runs[0].Outcome != managementapi.RunSucceeded || got.Runs[0].FinishedAt == nil {
		t.Fatalf("after the Job finished: got %d %+v, want run %d SUCCEEDED", got.TotalCount, got.Runs, b3.Id)
	}

	failures := []struct {
		name   string
		path   string
		params managementapi.ListValidatorRunsParams
		status int
		key    string
	}{
		{"unknown validator", "nobody", managementapi.ListValidatorRunsParams{}, http.StatusNotFound, "error"},
		{"unknown kind", "theta", managementapi.ListValidatorRunsParams{Kind: ptr(managementapi.RunKind("RESTORE"))}, http.StatusBadRequest, "kind"},
		{"limit too large", "theta", managementapi.ListValidatorRunsParams{Limit: ptr[int32](501)}, http.StatusBadRequest, "limit"},
		{"negative from", "theta", managementapi.ListValidatorRunsParams{From: ptr[int32](-1)}, http.StatusBadRequest, "from"},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			r, err := e.Management.ListValidatorRunsWithResponse(ctx, tt.path, &tt.params)
			if err != nil || r.StatusCode() != tt.status {
				t.Fatalf("got %d %v %s, want %d", r.StatusCode(), err, r.Body, tt.status)
			}
			if body := errorMap(t, r.Body); body[tt.key] == "" {
				t.Fatalf("body %v: want the key %q", body, tt.key)
			}
		})
	}
}
