package openapi_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/openapi"
)

// TestRequestStringsBounded: every string a request carries (parameters
// and the schemas request bodies reach, recursively) has a maxLength in
// both contracts, so no value reaches a database index unbounded. Exempt:
// enumerations (bounded by their values), binary uploads (bounded by the
// upload limits) and readOnly properties (ignored in a request).
func TestRequestStringsBounded(t *testing.T) {
	for name, load := range map[string]func() (*openapi3.T, error){"management": openapi.Management, "platform": openapi.Platform} {
		t.Run(name, func(t *testing.T) {
			doc, err := load()
			if err != nil {
				t.Fatal(err)
			}
			var unbounded []string
			for path, item := range doc.Paths.Map() {
				for method, op := range item.Operations() {
					at := method + " " + path
					for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
						if p.Value == nil {
							continue
						}
						where := fmt.Sprintf("%s %s parameter %s", at, p.Value.In, p.Value.Name)
						unbounded = append(unbounded, unboundedIn(where, p.Value.Schema, map[*openapi3.Schema]bool{})...)
						for mt, c := range p.Value.Content {
							unbounded = append(unbounded, unboundedIn(where+" "+mt, c.Schema, map[*openapi3.Schema]bool{})...)
						}
					}
					if op.RequestBody == nil || op.RequestBody.Value == nil {
						continue
					}
					for mt, c := range op.RequestBody.Value.Content {
						unbounded = append(unbounded, unboundedIn(at+" body "+mt, c.Schema, map[*openapi3.Schema]bool{})...)
					}
				}
			}
			sort.Strings(unbounded)
			for _, u := range unbounded {
				t.Errorf("%s has no bound", u)
			}
		})
	}
}

// unboundedIn lists the strings without maxLength that ref reaches.
func unboundedIn(where string, ref *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) []string {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return nil
	}
	s := ref.Value
	seen[s] = true
	var out []string
	if s.ReadOnly {
		return nil
	}
	if s.Type.Includes(openapi3.TypeString) && s.MaxLength == nil && len(s.Enum) == 0 && s.Format != "binary" {
		out = append(out, where)
	}
	out = append(out, unboundedIn(where+"[]", s.Items, seen)...)
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, unboundedIn(where+"."+n, s.Properties[n], seen)...)
	}
	if s.AdditionalProperties.Schema != nil {
		out = append(out, unboundedIn(where+".*", s.AdditionalProperties.Schema, seen)...)
	}
	for _, group := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range group {
			out = append(out, unboundedIn(where, sub, seen)...)
		}
	}
	return out
}

// TestUnboundedIn: the walk finds an unbounded string wherever a request
// schema nests it, and only there.
func TestUnboundedIn(t *testing.T) {
	str := func(edit func(*openapi3.Schema)) *openapi3.SchemaRef {
		s := openapi3.NewStringSchema()
		if edit != nil {
			edit(s)
		}
		return s.NewRef()
	}
	bounded := str(func(s *openapi3.Schema) { s.WithMaxLength(8) })
	object := func(name string, p *openapi3.SchemaRef) *openapi3.SchemaRef {
		return openapi3.NewObjectSchema().WithPropertyRef(name, p).NewRef()
	}
	tests := []struct {
		name   string
		schema *openapi3.SchemaRef
		want   []string
	}{
		{"string without maxLength", str(nil), []string{"x"}},
		{"string with maxLength", bounded, nil},
		{"enumeration", str(func(s *openapi3.Schema) { s.WithEnum("a", "b") }), nil},
		{"binary upload", str(func(s *openapi3.Schema) { s.WithFormat("binary") }), nil},
		{"read-only property", object("at", str(func(s *openapi3.Schema) { s.ReadOnly = true })), nil},
		{"Base64 without maxLength", str(func(s *openapi3.Schema) { s.WithFormat("byte") }), []string{"x"}},
		{"property", object("a", str(nil)), []string{"x.a"}},
		{"array items", openapi3.NewArraySchema().WithItems(str(nil).Value).NewRef(), []string{"x[]"}},
		{"nested object", object("a", object("b", str(nil))), []string{"x.a.b"}},
		{"map values", openapi3.NewObjectSchema().WithAdditionalProperties(str(nil).Value).NewRef(), []string{"x.*"}},
		{"allOf", (&openapi3.Schema{AllOf: openapi3.SchemaRefs{bounded, object("c", str(nil))}}).NewRef(), []string{"x.c"}},
		{"bounded throughout", object("a", openapi3.NewArraySchema().WithItems(bounded.Value).NewRef()), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unboundedIn("x", tt.schema, map[*openapi3.Schema]bool{})
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
