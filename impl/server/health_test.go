package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestHealthReportsDown: a dependency that stops answering turns the probe
// into 503 DOWN and names it.
func TestHealthReportsDown(t *testing.T) {
	t.Parallel()
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
	// The report is an answer, not a failed request: the probes of a
	// starting server see it every time.
	for _, line := range strings.Split(s.Logs(), "\n") {
		if strings.Contains(line, `"path":"/actuator/health"`) && strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("health's 503 logged as an error: %s", line)
		}
	}
	if !strings.Contains(s.Logs(), `"status":503`) {
		t.Error("the 503 is not in the request log")
	}
}
