package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestWellFormedRequests: a multipart upload without a boundary and a
// single-valued query parameter given twice are 400 in the release's shape,
// naming what is wrong, before any handler runs.
func TestWellFormedRequests(t *testing.T) {
	t.Parallel()
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

// TestNamesAndLengths: names that become keys refuse look-alike,
// zero-width, bidirectional and control characters and path separators;
// every string has a length both databases can index (a 3,000-character
// remote participant name is 400 on PostgreSQL too, not a btree error);
// ports are port numbers. On SQLite, and on PostgreSQL when
// TEST_POSTGRES_DSN is set.
func TestNamesAndLengths(t *testing.T) {
	t.Parallel()
	participant := func(name, adminPort string) string {
		b, _ := json.Marshal(map[string]string{"name": name, "adminAddress": "rp.test", "adminPort": adminPort, "ledgerAddress": "rp.test",
			"ledgerPort": "5001", "ledgerId": "l", "jsonApiUrl": "https://rp.test", "authProvider": "custom", "image": "i"})
		return string(b)
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"long participant name", "POST", "/api/remote-participants", participant(strings.Repeat("n", 3000), "5002"), 400, "name"},
		{"zero-width participant name", "POST", "/api/remote-participants", participant("rp\u200b1", "5002"), 400, "name"},
		{"right-to-left participant name", "POST", "/api/remote-participants", participant("rp\u202e1", "5002"), 400, "name"},
		{"look-alike participant name", "POST", "/api/remote-participants", participant("rр1", "5002"), 400, "name"}, // Cyrillic р
		{"participant name with a separator", "POST", "/api/remote-participants", participant("a/b", "5002"), 400, "name"},
		{"participant name ..", "POST", "/api/remote-participants", participant("..", "5002"), 400, "name"},
		{"adminPort not a number", "POST", "/api/remote-participants", participant("rp-1", "x"), 400, "adminPort"},
		{"adminPort out of range", "POST", "/api/remote-participants", participant("rp-1", "65536"), 400, "adminPort"},
		{"good participant", "POST", "/api/remote-participants", participant("rp-1", "5002"), 201, ""},
		{"long 2.0 wallet user", "POST", "/api/v1/validators/v/wallet-users", `{"name":"` + strings.Repeat("w", 300) + `"}`, 400, "name"},
		{"zero-width 2.0 wallet user", "POST", "/api/v1/validators/v/wallet-users", `{"name":"bob\u200b"}`, 400, "name"},
		{"right-to-left 2.0 user id", "POST", "/api/v1/validators/v/users/bob%E2%80%AEx/rights", "", 400, "userId"},
		{"2.0 party hint with a separator", "POST", "/api/v1/validators/v/parties?partyIdHint=a%2Fb", "", 400, "partyIdHint"},
	}
	backends := map[string]string{"sqlite": ""}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		backends["postgres"] = apitest.ThrowawayPostgres(t)
	}
	for backend, dsn := range backends {
		s := hostile(t, dsn)
		for _, tc := range cases {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				var body io.Reader
				ct := ""
				if tc.body != "" {
					body, ct = strings.NewReader(tc.body), "application/json"
				}
				resp, raw := do(t, s, tc.method, tc.path, ct, body, true)
				if resp.StatusCode != tc.status || tc.want != "" && !strings.Contains(errorText(t, raw), tc.want) {
					t.Fatalf("got %d %s, want %d naming %q", resp.StatusCode, raw, tc.status, tc.want)
				}
			})
		}
	}
}
