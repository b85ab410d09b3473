package management_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestStoredVersions: a row written before the version marker reads as
// before and is written as version 1 by its next edit, in the database and
// in the resource; a row of a newer version is refused, never rewritten.
func TestStoredVersions(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	if resp, err := e.Management.CreateValidatorWithResponse(ctx, newValidator("omega")); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", resp.StatusCode(), err)
	}
	list := func() *managementapi.ListValidatorsResponse {
		t.Helper()
		resp, err := e.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: ptr("omega")})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	put := func(body string) int {
		t.Helper()
		resp, err := e.Management.UpdateValidatorWithBodyWithResponse(ctx, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode()
	}
	version := func(config map[string]any) any { return config["version"] }
	rowConfig := func() map[string]any {
		t.Helper()
		row, _ := e.row(t, "omega")
		var m map[string]any
		if err := json.Unmarshal(row.Spec, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	setRow := func(config map[string]any) {
		t.Helper()
		row, _ := e.row(t, "omega")
		var err error
		if row.Spec, err = json.Marshal(config); err != nil {
			t.Fatal(err)
		}
		if err := e.App.Store.UpdateValidator(ctx, &row); err != nil {
			t.Fatal(err)
		}
	}

	current := rowConfig()
	if v := version(current); v != float64(domain.ValidatorConfigVersion) {
		t.Fatalf("version of a new row: got %v, want %d", v, domain.ValidatorConfigVersion)
	}
	before := list()
	if before.JSON200 == nil {
		t.Fatalf("list: got %d %s", before.StatusCode(), before.Body)
	}

	// Version 0: the same layout without the marker.
	v0 := map[string]any{}
	for k, v := range current {
		v0[k] = v
	}
	delete(v0, "version")
	setRow(v0)
	if got := list(); got.JSON200 == nil || !reflect.DeepEqual(got.JSON200.Validators, before.JSON200.Validators) {
		t.Fatalf("version 0 row: got %d %s, want %s", got.StatusCode(), got.Body, before.Body)
	}
	if st := put(`{"name":"omega","imageTag":"0.5.0"}`); st != http.StatusOK {
		t.Fatalf("edit of a version 0 row: got %d, want 200", st)
	}
	if v := version(rowConfig()); v != float64(domain.ValidatorConfigVersion) {
		t.Errorf("row after the edit: got version %v, want %d", v, domain.ValidatorConfigVersion)
	}
	if cfg, _ := e.cluster(t).Validators["omega"].Spec["config"].(map[string]any); version(cfg) != float64(domain.ValidatorConfigVersion) || cfg["imageTag"] != "0.5.0" {
		t.Errorf("resource spec.config after the edit: got version %v tag %v, want %d and 0.5.0", version(cfg), cfg["imageTag"], domain.ValidatorConfigVersion)
	}

	// A newer version: reads and edits fail, the row stays as it was.
	newer := rowConfig()
	newer["version"] = domain.ValidatorConfigVersion + 1
	newer["fieldOfTheFuture"] = "kept"
	setRow(newer)
	snapshot, _ := e.row(t, "omega")
	if got := list(); got.StatusCode() != http.StatusInternalServerError {
		t.Errorf("list with a newer row: got %d %s, want 500", got.StatusCode(), got.Body)
	}
	if st := put(`{"name":"omega","imageTag":"0.6.0"}`); st != http.StatusInternalServerError {
		t.Errorf("edit of a newer row: got %d, want 500", st)
	}
	if now, _ := e.row(t, "omega"); string(now.Spec) != string(snapshot.Spec) {
		t.Errorf("a newer row was rewritten: got %s, want %s", now.Spec, snapshot.Spec)
	}
	if !strings.Contains(e.Logs(), "newer server") {
		t.Error("log: want the reason (a newer server wrote the row)")
	}
}
