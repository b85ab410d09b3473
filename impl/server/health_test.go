package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestHealthReportsDown: a dependency that stops answering turns the probe
// into 503 DOWN and names it.
func TestHealthReportsDown(t *testing.T) {
	s := apitest.Start(t, apitest.Options{})
	if err := s.App.Store.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Public.GetHealthWithResponse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusServiceUnavailable || resp.JSON503 == nil {
		t.Fatalf("got %d %s, want 503 with a health body", resp.StatusCode(), resp.Body)
	}
	h := resp.JSON503
	if h.Status != platformapi.HealthDown || h.Components.Db.Status != platformapi.HealthDown || h.Components.Cluster.Status != platformapi.HealthUp {
		t.Fatalf("got %+v, want DOWN with db DOWN and cluster UP", *h)
	}
}
