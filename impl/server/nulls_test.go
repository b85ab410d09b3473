package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/openapi"
)

// nullCase sends one request body with one property set to null.
type nullCase struct {
	release, method, target, operation string
	field                              string // dotted path of the null property
	body                               []byte
}

// TestNullRefusedWhereNotNullable walks the request bodies of both
// contracts and sends, for each property that is not nullable (defaults
// included: kin-openapi would fill them for null), the operation's example
// body (or {}) with that property set to null. Each must be 400 in the
// release's shape naming the field: 1.11 {"<field>": "must not be null"},
// 2.0 {timestamp, status, error} whose error says "<field>: must not be
// null".
func TestNullRefusedWhereNotNullable(t *testing.T) {
	t.Parallel()
	var cases []nullCase
	for release, load := range map[string]func() (*openapi3.T, error){release111: openapi.Management, release20: openapi.Platform} {
		doc, err := load()
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, nullCases(release, doc)...)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].operation+cases[i].field < cases[j].operation+cases[j].field })
	if len(cases) < 100 {
		t.Fatalf("found %d non-nullable request properties, want both contracts' (at least 100)", len(cases))
	}
	for _, must := range []string{"updateBackupSchedule cron", "createGatewayWallet primary"} {
		if !slices.ContainsFunc(cases, func(c nullCase) bool { return c.operation+" "+c.field == must }) {
			t.Fatalf("no case for %s, whose default kin-openapi fills for null", must)
		}
	}
	s := apitest.Start(t, apitest.Options{})
	for _, c := range cases {
		t.Run(c.release+"/"+c.operation+"/"+c.field, func(t *testing.T) {
			resp, raw := do(t, s, c.method, c.target, "application/json", bytes.NewReader(c.body), true)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s %s with %s: got %d %s, want 400", c.method, c.target, c.body, resp.StatusCode, raw)
			}
			var body map[string]any
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("body %s: %v", raw, err)
			}
			if c.release == release111 {
				if got := body[c.field]; got != "must not be null" {
					t.Errorf("body %s: %q is %v, want \"must not be null\"", raw, c.field, got)
				}
				return
			}
			msg, _ := body["error"].(string)
			if body["status"] != float64(400) || body["timestamp"] == nil || !slices.Contains(strings.Split(msg, "; "), c.field+": must not be null") {
				t.Errorf("body %s: want {timestamp, status: 400, error} naming %q: must not be null", raw, c.field)
			}
		})
	}
}

// nullCases lists, for every operation with a JSON request body, a request
// per non-nullable property its body schema reaches.
func nullCases(release string, doc *openapi3.T) []nullCase {
	var out []nullCase
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil {
				continue
			}
			target := requestTarget(path, append(slices.Clone(item.Parameters), op.Parameters...))
			var base any = map[string]any{}
			for _, ex := range mediaExamples(mt) {
				base = ex
				break
			}
			for _, field := range nonNullable(mt.Schema, nil, map[*openapi3.Schema]int{}) {
				body := withNull(base, field)
				raw, _ := json.Marshal(body)
				out = append(out, nullCase{release: release, method: method, target: target, operation: op.OperationID, field: strings.Join(field, "."), body: raw})
			}
		}
	}
	return out
}

// requestTarget fills the path parameters and required query parameters
// with their examples, or with values every pattern admits.
func requestTarget(path string, params openapi3.Parameters) string {
	q := url.Values{}
	for _, pr := range params {
		p := pr.Value
		v := "validator-1"
		if p.Example != nil {
			v = fmt.Sprint(p.Example)
		}
		switch p.In {
		case openapi3.ParameterInPath:
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(v))
		case openapi3.ParameterInQuery:
			if p.Required {
				q.Set(p.Name, v)
			}
		}
	}
	if len(q) > 0 {
		return path + "?" + q.Encode()
	}
	return path
}

// TestNoNullableDefault: no request property of either contract admits null
// and has a default. The server refuses a null that kin-openapi replaced by
// the property's default (it fills defaults for null as for absence); a
// property that admits null and has one would be refused a null it admits.
func TestNoNullableDefault(t *testing.T) {
	t.Parallel()
	for release, load := range map[string]func() (*openapi3.T, error){release111: openapi.Management, release20: openapi.Platform} {
		doc, err := load()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[*openapi3.Schema]bool{}
		var walk func(ref *openapi3.SchemaRef, at string)
		walk = func(ref *openapi3.SchemaRef, at string) {
			if ref == nil || ref.Value == nil || seen[ref.Value] {
				return
			}
			seen[ref.Value] = true
			for _, s := range composed(ref) {
				walk(s.Value.Items, at+".0")
				walk(s.Value.AdditionalProperties.Schema, at+".*")
				for name, p := range s.Value.Properties {
					if p.Value != nil && p.Value.Default != nil && slices.ContainsFunc(composed(p), func(c *openapi3.SchemaRef) bool { return c.Value.Nullable }) {
						t.Errorf("%s: %s.%s admits null and has a default", release, at, name)
					}
					walk(p, at+"."+name)
				}
			}
		}
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				if op.RequestBody != nil && op.RequestBody.Value != nil {
					for _, mt := range op.RequestBody.Value.Content {
						walk(mt.Schema, method+" "+path)
					}
				}
			}
		}
	}
}

// nonNullable lists the paths of the properties under ref that a request
// may carry and whose schema is not nullable; array items are reached at
// index 0. A schema is walked at most twice on one path (recursive types).
func nonNullable(ref *openapi3.SchemaRef, at []string, seen map[*openapi3.Schema]int) [][]string {
	if ref == nil || ref.Value == nil || seen[ref.Value] >= 2 || len(at) > 8 {
		return nil
	}
	seen[ref.Value]++
	defer func() { seen[ref.Value]-- }()
	var out [][]string
	for _, s := range composed(ref) {
		if s.Value.Items != nil {
			out = append(out, nonNullable(s.Value.Items, append(slices.Clone(at), "0"), seen)...)
		}
		for name, p := range s.Value.Properties {
			if p.Value == nil || p.Value.ReadOnly {
				continue
			}
			field := append(slices.Clone(at), name)
			if !slices.ContainsFunc(composed(p), func(c *openapi3.SchemaRef) bool { return c.Value.Nullable }) {
				out = append(out, field)
			}
			out = append(out, nonNullable(p, field, seen)...)
		}
	}
	return out
}

// composed is a schema and the allOf, oneOf and anyOf branches under it.
func composed(ref *openapi3.SchemaRef) []*openapi3.SchemaRef {
	out := []*openapi3.SchemaRef{ref}
	for _, branches := range []openapi3.SchemaRefs{ref.Value.AllOf, ref.Value.OneOf, ref.Value.AnyOf} {
		for _, b := range branches {
			if b != nil && b.Value != nil {
				out = append(out, composed(b)...)
			}
		}
	}
	return out
}

// withNull is a copy of base with field set to null, making the objects
// and arrays on its way.
func withNull(base any, field []string) any {
	raw, _ := json.Marshal(base)
	var doc any
	_ = json.Unmarshal(raw, &doc)
	var set func(v any, field []string) any
	set = func(v any, field []string) any {
		if i, err := strconv.Atoi(field[0]); err == nil && i == 0 {
			arr, _ := v.([]any)
			if len(arr) == 0 {
				arr = []any{map[string]any{}}
			}
			if len(field) == 1 {
				arr[0] = nil
			} else {
				arr[0] = set(arr[0], field[1:])
			}
			return arr
		}
		obj, _ := v.(map[string]any)
		if obj == nil {
			obj = map[string]any{}
		}
		if len(field) == 1 {
			obj[field[0]] = nil
		} else {
			obj[field[0]] = set(obj[field[0]], field[1:])
		}
		return obj
	}
	return set(doc, field)
}
