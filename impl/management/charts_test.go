package management_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/charts/chartstest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/management"
)

// In chart mode a create or an edit whose derived values the cached charts
// of its imageTag refuse answers 400 keyed by the chart value, with the
// chart's message, and records nothing; charts not cached are not checked.
func TestChartValuesChecked(t *testing.T) {
	reg := chartstest.NewRegistry(t)
	reg.Push(t, chartstest.V1, chartstest.V2)
	src, err := charts.NewSource(filepath.Join(t.TempDir(), "charts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range chartstest.Charts {
		if _, err := src.Get(charts.Reference(reg.Repository, name), chartstest.V1); err != nil {
			t.Fatal(err)
		}
	}
	renderer := charts.NewRenderer(charts.Options{Repository: reg.Repository, Source: src})
	reg.Server.Close() // the check never reaches the registry
	s := apitest.Start(t, apitest.Options{App: []app.Option{app.With(func(o *management.Options) {
		o.Charts = charts.Checker{Renderer: renderer, Resource: o.Cluster.(*cluster.Kube).ValidatorResource}
	})}})
	ctx := context.Background()

	create := func(name, tag, nodeIdentifier string) *managementapi.CreateValidatorResponse {
		t.Helper()
		v := apitest.ValidatorPayload(name)
		v.ImageTag = tag
		v.ClusterParticipantConfig.NodeIdentifier = &nodeIdentifier
		resp, err := s.Management.CreateValidatorWithResponse(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	listed := func(name string) int {
		t.Helper()
		resp, err := s.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: &name})
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("list: %v %s", err, resp.Body)
		}
		return len(resp.JSON200.Validators)
	}

	resp := create("refused", chartstest.V1, "Not Valid")
	if resp.StatusCode() != http.StatusBadRequest {
		t.Fatalf("create: got %d %s, want 400", resp.StatusCode(), resp.Body)
	}
	body := errorMap(t, resp.Body)
	if msg := body["splice-validator.nodeIdentifier"]; !strings.Contains(msg, "does not match pattern") || !strings.Contains(msg, "splice-validator "+chartstest.V1) {
		t.Fatalf("create: got %v, want key splice-validator.nodeIdentifier with the chart's message", body)
	}
	if n := listed("refused"); n != 0 {
		t.Fatalf("a refused create was recorded")
	}

	// Not cached: not checked (the leader pulls the charts and shows what
	// it finds).
	if resp := create("uncached", chartstest.V2, "Not Valid"); resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create at an uncached version: got %d %s, want 201", resp.StatusCode(), resp.Body)
	}
	if resp := create("accepted", chartstest.V1, "accepted-node"); resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create: got %d %s, want 201", resp.StatusCode(), resp.Body)
	}

	put := func(body string) *managementapi.UpdateValidatorResponse {
		t.Helper()
		resp, err := s.Management.UpdateValidatorWithBodyWithResponse(ctx, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	long := strings.Repeat("x", 40) + "@example.test"
	up := put(`{"name":"accepted","clusterConfig":{"migration":{"id":1},"contactPoint":"` + long + `"}}`)
	if up.StatusCode() != http.StatusBadRequest {
		t.Fatalf("edit: got %d %s, want 400", up.StatusCode(), up.Body)
	}
	if msg := errorMap(t, up.Body)["splice-validator.contactPoint"]; !strings.Contains(msg, "maxLength") {
		t.Fatalf("edit: got %s, want key splice-validator.contactPoint with the chart's message", up.Body)
	}
	if up := put(`{"name":"accepted","clusterConfig":{"migration":{"id":1},"contactPoint":"ops@example.test"}}`); up.StatusCode() != http.StatusOK {
		t.Fatalf("edit: got %d %s, want 200", up.StatusCode(), up.Body)
	}
}
