package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestWellFormedRequests: a multipart upload without a boundary and a
// single-valued query parameter given twice are 400 in the release's shape,
// naming what is wrong, before any handler runs.
func TestWellFormedRequests(t *testing.T) {
	s := apitest.Start(t, apitest.Options{})
	tests := []struct {
		name, method, path, contentType, body string
		want                                  string
	}{
		{"multipart without boundary", "POST", "/api/v1/validators/v/dars/upload", "multipart/form-data", "--x\r\n", "body: Content-Type multipart/form-data needs a boundary parameter"},
		{"repeated 1.11 limit", "GET", "/api/validators?limit=1&limit=2", "", "", "limit: must be given once, got 2 values"},
		{"repeated 1.11 filter", "GET", "/api/remote-participants?name=a&name=b", "", "", "name: must be given once"},
		{"repeated 2.0 query", "POST", "/api/v1/validators/v/parties?partyIdHint=a&partyIdHint=b", "", "", "partyIdHint: must be given once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, raw := do(t, s, tt.method, tt.path, tt.contentType, strings.NewReader(tt.body), true)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(errorText(t, raw), tt.want) {
				t.Fatalf("got %d %s, want 400 containing %q", resp.StatusCode, raw, tt.want)
			}
		})
	}
}
