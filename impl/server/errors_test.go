package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/management"
	"github.com/validator-manager/validator-manager/impl/platform"
	"github.com/validator-manager/validator-manager/impl/server"
)

// panicking handlers stand in for a bug anywhere in a handler.
type panickingManagement struct{ *management.Server }

func (panickingManagement) ListValidators(context.Context, managementapi.ListValidatorsRequestObject) (managementapi.ListValidatorsResponseObject, error) {
	panic("boom")
}

type panickingPlatform struct{ *platform.Server }

func (panickingPlatform) ListValidators(context.Context, platformapi.ListValidatorsRequestObject) (platformapi.ListValidatorsResponseObject, error) {
	panic("boom")
}

// TestErrorShapes: whatever goes wrong, the body is in the shape of the
// release that owns the path, never echo's default.
func TestErrorShapes(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{
		Config: func(c *config.Config) { c.MaxBodyBytes = 1 << 10 },
		App: []app.Option{app.With(func(o *server.Options) {
			o.Management = panickingManagement{o.Management.(*management.Server)}
			o.Platform = panickingPlatform{o.Platform.(*platform.Server)}
		})},
	})
	big := `{"name":"` + strings.Repeat("a", 2<<10) + `"}`
	cases := []struct {
		name         string
		method, path string
		body         string
		status       int
		release      string // "1.11" or "2.0"
		message      string // substring of the error message
	}{
		{"unknown path under /api", "GET", "/api/nothing-here", "", 404, "1.11", "no route GET /api/nothing-here"},
		{"unknown path under /api/v1", "GET", "/api/v1/nothing-here", "", 404, "2.0", "no route GET /api/v1/nothing-here"},
		{"unknown path at the root", "GET", "/nothing-here", "", 404, "2.0", "no route"},
		{"wrong method 1.11", "DELETE", "/api/validators", "", 405, "1.11", "method DELETE is not allowed"},
		{"wrong method 2.0", "DELETE", "/api/v1/validators", "", 405, "2.0", "method DELETE is not allowed"},
		{"oversized body 1.11", "POST", "/api/validators", big, 413, "1.11", "too large"},
		{"oversized body 2.0", "POST", "/api/v1/validators/v1/wallet-users", big, 413, "2.0", "too large"},
		{"panic 1.11", "GET", "/api/validators", "", 500, "1.11", "internal server error"},
		{"panic 2.0", "GET", "/api/v1/validators", "", 500, "2.0", "internal server error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, s.URL+tc.path, bytes.NewBufferString(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+s.Token)
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("got status %d, want %d", resp.StatusCode, tc.status)
			}
			msg := errorMessage(t, resp, tc.release, tc.status)
			if !strings.Contains(msg, tc.message) {
				t.Fatalf("got message %q, want it to contain %q", msg, tc.message)
			}
		})
	}
	if want := `"path":"/api/nothing-here","status":404`; !strings.Contains(s.Logs(), want) {
		t.Errorf("request log lacks %s: the logged status must be the one sent", want)
	}
	if !strings.Contains(s.Logs(), `"msg":"panic"`) {
		t.Error("a panic was not logged")
	}
}

// errorMessage decodes an error body of the given release and checks its shape.
func errorMessage(t *testing.T, resp *http.Response, release string, status int) string {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("got content type %q, want application/json", ct)
	}
	if release == "1.11" {
		var m map[string]string
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("1.11 error body is not a string map: %v", err)
		}
		return m["error"]
	}
	var e struct {
		Timestamp string `json:"timestamp"`
		Status    int    `json:"status"`
		Error     string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("2.0 error body: %v", err)
	}
	if e.Status != status {
		t.Fatalf("got body status %d, want %d", e.Status, status)
	}
	if _, err := time.Parse(time.RFC3339, e.Timestamp); err != nil {
		t.Fatalf("timestamp %q is not ISO 8601 with offset: %v", e.Timestamp, err)
	}
	return e.Error
}
