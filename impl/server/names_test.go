package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/openapi"
)

// badNames are names no Kubernetes object can have (escaped as they go on
// the wire): a slash, the dot segments, upper case, longer than any name.
var badNames = []string{"a%2Fb", ".", "..", "Validator-1", "a%20b", strings.Repeat("a", 254)}

// TestNamesNoObjectCanHave sends every operation of both contracts whose
// path takes {name} with names no Kubernetes object can have: each is
// refused by validation (400) or not found (404), in the release's shape,
// never a 5xx, and nothing is logged at ERROR for them.
func TestNamesNoObjectCanHave(t *testing.T) {
	t.Parallel()
	type op struct{ release, method, path, id string }
	var ops []op
	for release, load := range map[string]func() (*openapi3.T, error){release111: openapi.Management, release20: openapi.Platform} {
		doc, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for path, item := range doc.Paths.Map() {
			if !strings.Contains(path, "{name}") {
				continue
			}
			for method, o := range item.Operations() {
				ops = append(ops, op{release, method, path, o.OperationID})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].id < ops[j].id })
	if len(ops) < 40 {
		t.Fatalf("found %d operations taking {name}, want both contracts' (at least 40)", len(ops))
	}
	s := apitest.Start(t, apitest.Options{})
	for _, o := range ops {
		for _, name := range badNames {
			t.Run(o.release+"/"+o.id+"/"+name[:min(len(name), 8)], func(t *testing.T) {
				path := strings.ReplaceAll(o.path, "{name}", name)
				for k, v := range map[string]string{"{userId}": "u", "{username}": "w"} {
					path = strings.ReplaceAll(path, k, v)
				}
				var body io.Reader
				contentType := ""
				if o.method == http.MethodPost || o.method == http.MethodPut {
					body, contentType = strings.NewReader(`{}`), "application/json"
				}
				resp, raw := do(t, s, o.method, path, contentType, body, true)
				if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
					t.Fatalf("%s %s: got %d %s, want 400 or 404", o.method, path, resp.StatusCode, raw)
				}
				var shape map[string]any
				if err := json.Unmarshal(raw, &shape); err != nil {
					t.Fatalf("body %s: %v", raw, err)
				}
				if o.release == release20 && (shape["status"] != float64(resp.StatusCode) || shape["timestamp"] == nil) {
					t.Errorf("body %s: want release 2.0's {timestamp, status, error}", raw)
				}
				if o.release == release111 && len(shape) == 0 {
					t.Errorf("body %s: want release 1.11's error map", raw)
				}
			})
		}
	}
	for _, line := range strings.Split(s.Logs(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil {
			continue
		}
		if strings.Contains(line, "invalid resource name") {
			t.Errorf("logged: %s", line)
		}
		if entry["level"] == "ERROR" {
			t.Errorf("logged at ERROR: %s", line)
		}
	}
}

// TestDocsAssetsOutsideAnswerInShape: a path under the page's assets that
// names no file, or climbs out of them, is a 404 in release 2.0's shape,
// not net/http's plain text.
func TestDocsAssetsOutsideAnswerInShape(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	for _, path := range []string{"/docs-ui/../x", "/docs-ui/no-such-file.js", "/docs-ui/xterm/../../x"} {
		resp, raw := do(t, s, http.MethodGet, path, "", nil, false)
		var shape map[string]any
		if resp.StatusCode != http.StatusNotFound || json.Unmarshal(raw, &shape) != nil || shape["status"] != float64(404) {
			t.Errorf("GET %s: got %d %q (%s), want 404 {timestamp, status, error}", path, resp.StatusCode, raw, resp.Header.Get("Content-Type"))
		}
	}
	if resp, _ := do(t, s, http.MethodGet, "/docs-ui/console.js", "", nil, false); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /docs-ui/console.js: got %d, want 200", resp.StatusCode)
	}
}
