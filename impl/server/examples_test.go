package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/openapi"
)

// docExample is one example of a served document: of a parameter, a request
// body, a response body or a response header.
type docExample struct {
	release string
	method  string
	path    string
	op      *openapi3.Operation
	where   string // what it exemplifies, for messages
	request bool   // a parameter or request body
	param   *openapi3.Parameter
	// own: the operation's own example, not one of a shared component
	// parameter (whose example other operations send).
	own    bool
	status string // response status ("400", "default"); empty for requests
	schema *openapi3.Schema
	value  any
}

// documentExamples collects every example of doc that the documentation page
// shows or sends: parameters (example and examples), request bodies and
// responses (media type example and examples, and header examples).
// Schema-level examples are validated by openapi.load when the document is
// read (kin-openapi checks them by default).
func documentExamples(release string, doc *openapi3.T) []docExample {
	var out []docExample
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			add := func(e docExample) {
				e.release, e.method, e.path, e.op = release, method, path, op
				out = append(out, e)
			}
			params := append(slices.Clone(item.Parameters), op.Parameters...)
			for _, pr := range params {
				p := pr.Value
				where := fmt.Sprintf("parameter %s (%s)", p.Name, p.In)
				if p.Example != nil {
					add(docExample{where: where, request: true, param: p, own: pr.Ref == "", schema: p.Schema.Value, value: p.Example})
				}
				for name, ex := range p.Examples {
					add(docExample{where: where + " example " + name, request: true, param: p, own: pr.Ref == "", schema: p.Schema.Value, value: ex.Value.Value})
				}
			}
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					for name, v := range mediaExamples(mt) {
						add(docExample{where: "request body " + ct + name, request: true, own: true, schema: mt.Schema.Value, value: v})
					}
				}
			}
			for status, rr := range op.Responses.Map() {
				r := rr.Value
				for ct, mt := range r.Content {
					for name, v := range mediaExamples(mt) {
						add(docExample{where: "response " + status + " " + ct + name, status: status, schema: mt.Schema.Value, value: v})
					}
				}
				for hname, hr := range r.Headers {
					h := hr.Value
					if h.Example != nil {
						add(docExample{where: "response " + status + " header " + hname, status: status, schema: h.Schema.Value, value: h.Example})
					}
					for name, ex := range h.Examples {
						add(docExample{where: "response " + status + " header " + hname + " example " + name, status: status, schema: h.Schema.Value, value: ex.Value.Value})
					}
				}
			}
		}
	}
	return out
}

// mediaExamples is a media type's example and its named examples, keyed by
// a suffix for messages.
func mediaExamples(mt *openapi3.MediaType) map[string]any {
	out := map[string]any{}
	if mt.Example != nil {
		out[""] = mt.Example
	}
	for name, ex := range mt.Examples {
		out[" example "+name] = ex.Value.Value
	}
	return out
}

func servedExamples(t *testing.T) []docExample {
	t.Helper()
	mgmt, err := openapi.Management()
	if err != nil {
		t.Fatal(err)
	}
	plat, err := openapi.Platform()
	if err != nil {
		t.Fatal(err)
	}
	return append(documentExamples(release111, mgmt), documentExamples(release20, plat)...)
}

// TestDocumentExamplesMatchTheirSchemas: every example of both served
// documents is valid against its own schema, read as the page uses it
// (request examples as requests, response examples as responses).
func TestDocumentExamplesMatchTheirSchemas(t *testing.T) {
	t.Parallel()
	examples := servedExamples(t)
	if len(examples) < 20 {
		t.Fatalf("found %d examples, want the documents' examples (at least 20)", len(examples))
	}
	for _, e := range examples {
		dir := openapi3.VisitAsResponse()
		if e.request {
			dir = openapi3.VisitAsRequest()
		}
		if err := e.schema.VisitJSON(e.value, dir, openapi3.MultiErrors()); err != nil {
			t.Errorf("%s %s %s %s: %v", e.release, e.method, e.path, e.where, err)
		}
		// An error example's status is the status it is an example of.
		if obj, ok := e.value.(map[string]any); ok && e.status != "" && e.status != "default" {
			if st, ok := obj["status"].(float64); ok && fmt.Sprint(st) != e.status {
				t.Errorf("%s %s %s %s: status %v in an example of %s", e.release, e.method, e.path, e.where, st, e.status)
			}
		}
	}
}

// TestResponseExamplesAreWhatTheServerSends: the error examples every
// operation shows are the bodies the server sends for them (the message
// where it is fixed, the shape and status where it depends on the request).
func TestResponseExamplesAreWhatTheServerSends(t *testing.T) {
	t.Parallel()
	// The examples name the namespace "default", as a first run's server has.
	s := apitest.Start(t, apitest.Options{Config: func(c *config.Config) { c.Namespace = "default" }})
	send := func(method, path, token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, s.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var body map[string]any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, raw)
			}
		}
		return resp.StatusCode, body
	}
	example := func(release, method, path, status string) map[string]any {
		t.Helper()
		for _, e := range servedExamples(t) {
			if e.release == release && e.method == method && e.path == path && e.status == status && !strings.Contains(e.where, "header") {
				return e.value.(map[string]any)
			}
		}
		t.Fatalf("%s %s %s has no example of %s", release, method, path, status)
		return nil
	}
	cases := []struct {
		name, release, method, template, path, token string
		status                                       int
		fixed                                        bool // the message is the example's
	}{
		{"1.11 401", release111, http.MethodGet, "/api/validators", "/api/validators", "", http.StatusUnauthorized, true},
		{"1.11 404", release111, http.MethodGet, "/api/validators/{name}/prune", "/api/validators/x/prune", s.Token, http.StatusNotFound, true},
		{"2.0 404", release20, http.MethodGet, "/api/v1/validators/{name}", "/api/v1/validators/validator-9", s.Token, http.StatusNotFound, true},
		{"2.0 400", release20, http.MethodPost, "/api/v1/validators/{name}/parties", "/api/v1/validators/validator-1/parties", s.Token, http.StatusBadRequest, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, got := send(tc.method, tc.path, tc.token)
			if status != tc.status {
				t.Fatalf("got %d %v, want %d", status, got, tc.status)
			}
			key := fmt.Sprint(tc.status)
			if tc.status == http.StatusNotImplemented {
				key = "default"
			}
			want := example(tc.release, tc.method, tc.template, key)
			if tc.release == release20 {
				delete(got, "timestamp")
				want = maps(want)
				delete(want, "timestamp")
			}
			if tc.fixed && !jsonEqual(got, want) {
				t.Errorf("server sends %v, the example shows %v", got, want)
			}
		})
	}
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestRequestExamplesAreAccepted sends every operation whose required inputs
// all have examples, built from those examples alone, as the documentation
// page's Try it out does, and expects an answer that is not a refusal of the
// request: 2xx, or 501 for an operation not built yet. createValidator's
// example comes first: it creates the validator that the 2.0 path examples
// name. Every request example belongs to an operation sent here.
func TestRequestExamplesAreAccepted(t *testing.T) {
	t.Parallel()
	examples := servedExamples(t)
	type opKey struct{ release, method, path string }
	var order []opKey
	byOp := map[opKey][]docExample{}
	for _, e := range examples {
		if !e.request {
			continue
		}
		k := opKey{e.release, e.method, e.path}
		if _, ok := byOp[k]; !ok {
			order = append(order, k)
		}
		byOp[k] = append(byOp[k], e)
	}
	// Creates first (createValidator before anything names its validator),
	// removals last; otherwise the documents' order.
	rank := func(k opKey) int {
		switch {
		case k.method == http.MethodPost && k.path == "/api/validators":
			return 0
		case k.method == http.MethodPost:
			return 1
		case k.method == http.MethodDelete:
			return 3
		}
		return 2
	}
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i]) < rank(order[j]) })

	s := apitest.Start(t, apitest.Options{})
	sent := map[any]bool{} // parameter examples (by parameter) sent in an accepted request
	for _, k := range order {
		exs := byOp[k]
		op := exs[0].op
		reqs, missing := exampleRequests(k.path, op, exs)
		if missing != "" {
			// Shared parameter examples are sent by the operations that
			// can be tried as shown; an operation's own example must be.
			if slices.ContainsFunc(exs, func(e docExample) bool { return e.own }) {
				t.Errorf("%s %s %s (%s) has examples of its own but none for its required %s, so it cannot be tried as shown", k.release, k.method, k.path, op.OperationID, missing)
			}
			continue
		}
		for _, r := range reqs {
			t.Run(k.release+"/"+op.OperationID+r.name, func(t *testing.T) {
				if op.OperationID == "openLedgerConsole" {
					t.Skip("a WebSocket upgrade cannot be tried as a plain request; the console tests (impl/platform) open it with its examples")
				}
				if op.OperationID == "watchValidators" {
					t.Skip("a stream does not end as a plain request does; TestWatchValidators opens it")
				}
				req, _ := http.NewRequestWithContext(t.Context(), k.method, s.URL+r.target, bytes.NewReader(r.body))
				for h, v := range r.header {
					req.Header.Set(h, v)
				}
				if r.body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
				req.Header.Set("Authorization", "Bearer "+s.Token)
				resp, err := s.HTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotImplemented {
					t.Fatalf("%s %s with body %s: got %d %s, want 2xx (or 501 for an operation not built yet)", k.method, r.target, r.body, resp.StatusCode, raw)
				}
				if k.method == http.MethodPost && k.path == "/api/validators" {
					// The create answers at once; what follows names the
					// validator the leader provisions.
					var created struct{ Name string }
					if err := json.Unmarshal(r.body, &created); err == nil && created.Name != "" {
						s.Provisioned(t, created.Name)
					}
				}
				for _, e := range exs {
					if e.param != nil {
						sent[e.param] = true
					}
				}
			})
		}
	}
	for _, e := range examples {
		if e.param != nil && !sent[e.param] && e.path != "/api/ws/ledger-console" {
			t.Errorf("%s %s %s %s: no accepted request sent this example", e.release, e.method, e.path, e.where)
		}
	}
}

type exampleRequest struct {
	name   string
	target string
	header map[string]string
	body   []byte
}

// exampleRequests builds one request per body example (one request when the
// body has none) from op's examples; missing names a required input without
// an example.
func exampleRequests(path string, op *openapi3.Operation, exs []docExample) ([]exampleRequest, string) {
	params := map[string]docExample{}
	var bodies []docExample
	for _, e := range exs {
		if e.param != nil {
			if _, ok := params[e.param.In+" "+e.param.Name]; !ok {
				params[e.param.In+" "+e.param.Name] = e
			}
		} else {
			bodies = append(bodies, e)
		}
	}
	base := exampleRequest{target: path, header: map[string]string{}}
	query := url.Values{}
	for key, e := range params {
		switch e.param.In {
		case openapi3.ParameterInPath:
			base.target = strings.ReplaceAll(base.target, "{"+e.param.Name+"}", url.PathEscape(fmt.Sprint(e.value)))
		case openapi3.ParameterInQuery:
			if list, ok := e.value.([]any); ok {
				for _, v := range list {
					query.Add(e.param.Name, fmt.Sprint(v))
				}
			} else {
				query.Set(e.param.Name, fmt.Sprint(e.value))
			}
		case openapi3.ParameterInHeader:
			base.header[e.param.Name] = fmt.Sprint(e.value)
		default:
			return nil, key + " (cannot be sent)"
		}
	}
	if strings.Contains(base.target, "{") {
		return nil, "path parameters of " + base.target
	}
	for _, pr := range op.Parameters {
		if p := pr.Value; p.Required {
			if _, ok := params[p.In+" "+p.Name]; !ok {
				return nil, p.In + " parameter " + p.Name
			}
		}
	}
	if len(query) > 0 {
		base.target += "?" + query.Encode()
	}
	if op.RequestBody != nil && op.RequestBody.Value.Required && len(bodies) == 0 {
		return nil, "request body"
	}
	if len(bodies) == 0 {
		return []exampleRequest{base}, ""
	}
	var out []exampleRequest
	for _, b := range bodies {
		r := base
		r.name = strings.TrimPrefix(b.where, "request body application/json")
		r.body, _ = json.Marshal(b.value)
		out = append(out, r)
	}
	return out, ""
}

// TestReadmeCreatePayloadIsTheExample: the README's curl create sends the
// createValidator example of the document.
func TestReadmeCreatePayloadIsTheExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "/api/validators -d '")
	if start < 0 {
		t.Fatal("README shows no curl create (/api/validators -d '...')")
	}
	payload := text[start+len("/api/validators -d '"):]
	payload = payload[:strings.Index(payload, "'")]
	var got any
	if err := json.Unmarshal([]byte(payload), &got); err != nil {
		t.Fatalf("README's payload is not JSON: %v", err)
	}
	doc, err := openapi.Management()
	if err != nil {
		t.Fatal(err)
	}
	want := doc.Paths.Value("/api/validators").Post.RequestBody.Value.Content.Get("application/json").Example
	if !jsonEqual(got, want) {
		t.Errorf("README's payload %v is not the document's example %v", got, want)
	}
}
