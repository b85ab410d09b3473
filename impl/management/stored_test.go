package management_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/management"
)

// TestStoredVersions: a row written before the version marker reads as
// before and is written as version 1 by its next edit, in the database and
// in the resource; a row of a newer version is refused, never rewritten.
func TestStoredVersions(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	if resp, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("omega")); err != nil || resp.StatusCode() != http.StatusCreated {
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
	// setRow stores config without a list view, as a row from before
	// migration 0006 (or one whose view is of another rendering): reads
	// render it from the configuration.
	// The leader writes the row too (its list view, the phase): a write
	// of the row as read since then is refused, and made again on the row
	// as it is, as an edit does.
	setRow := func(config map[string]any) {
		t.Helper()
		spec, err := json.Marshal(config)
		if err != nil {
			t.Fatal(err)
		}
		for attempt := 1; ; attempt++ {
			row, _ := e.row(t, "omega")
			row.Spec, row.ListView, row.ListViewVersion = spec, nil, 0
			err := e.App.Store.UpdateValidator(ctx, &row)
			if errors.Is(err, domain.ErrWrittenMeanwhile) && attempt < 10 {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			return
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
	// The leader applies the edit from the record; its cache may show the
	// resource as it was a moment longer.
	apitest.Eventually(t, 10*time.Second, "the edit applied to the resource", func() error {
		if cfg, _ := e.cluster(t).Validators["omega"].Spec["config"].(map[string]any); version(cfg) != float64(domain.ValidatorConfigVersion) || cfg["imageTag"] != "0.5.0" {
			return fmt.Errorf("resource spec.config after the edit: got version %v tag %v, want %d and 0.5.0", version(cfg), cfg["imageTag"], domain.ValidatorConfigVersion)
		}
		return nil
	})

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

	// A newer server that wrote a list view of this server's rendering: the
	// list shows that view (it is what this release lists); edits still fail.
	row, _ := e.row(t, "omega")
	row.ListView, row.ListViewVersion = []byte(`{"imageTag":"0.7.0"}`), management.ListViewVersion
	if err := e.App.Store.UpdateValidator(ctx, &row); err != nil {
		t.Fatal(err)
	}
	if got := list(); got.JSON200 == nil || len(got.JSON200.Validators) != 1 || *got.JSON200.Validators[0].ImageTag != "0.7.0" {
		t.Errorf("list with a newer row and a current view: got %d %s, want 200 with imageTag 0.7.0", got.StatusCode(), got.Body)
	}
}

// TestRefreshListViews: rows without a current list view (from before
// migration 0006) list the same as with one; the refresh writes their
// views, and leaves alone a row whose configuration changed since it read it.
func TestRefreshListViews(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	for _, name := range []string{"alpha", "beta"} {
		if resp, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload(name)); err != nil || resp.StatusCode() != http.StatusCreated {
			t.Fatalf("create %s: %v %v", name, resp.StatusCode(), err)
		}
		// The leader's writes to the row must be over before the test's.
		e.Provisioned(t, name)
	}
	list := func() string {
		t.Helper()
		resp, err := e.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{})
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("list: %v %v", resp.StatusCode(), err)
		}
		return string(resp.Body)
	}
	before := list()
	for _, name := range []string{"alpha", "beta"} {
		row, _ := e.row(t, name)
		row.ListView, row.ListViewVersion = nil, 0
		if err := e.App.Store.UpdateValidator(ctx, &row); err != nil {
			t.Fatal(err)
		}
	}
	if got := list(); got != before {
		t.Fatalf("list of rows without views:\ngot  %s\nwant %s", got, before)
	}

	// beta is written after the refresh read it: its view is not written
	// from the old row.
	stale, err := e.App.Store.StaleListViews(ctx, management.ListViewVersion, "", 10)
	if err != nil || len(stale) != 2 {
		t.Fatalf("stale views: got %d %v, want 2", len(stale), err)
	}
	if err := e.App.Store.SetListViews(ctx, []domain.ListViewUpdate{{Name: "beta", UpdatedAt: stale[1].UpdatedAt.Add(-time.Millisecond), View: []byte(`{"imageTag":"wrong"}`), Version: management.ListViewVersion}}); err != nil {
		t.Fatal(err)
	}
	if row, _ := e.row(t, "beta"); row.ListView != nil {
		t.Errorf("a view rendered from an old configuration was stored: %s", row.ListView)
	}

	if err := e.App.Management.RefreshListViews(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "beta"} {
		if row, _ := e.row(t, name); row.ListViewVersion != management.ListViewVersion || len(row.ListView) < 100 {
			t.Errorf("%s after the refresh: version %d view %s", name, row.ListViewVersion, row.ListView)
		}
	}
	if stale, err := e.App.Store.StaleListViews(ctx, management.ListViewVersion, "", 10); err != nil || len(stale) != 0 {
		t.Errorf("stale views after the refresh: %d %v", len(stale), err)
	}
	if got := list(); got != before {
		t.Errorf("list after the refresh:\ngot  %s\nwant %s", got, before)
	}
}
