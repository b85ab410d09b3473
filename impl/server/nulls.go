package server

import (
	"cmp"
	"errors"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// nullsRefused lists the properties of a JSON request body that are an
// explicit null where the contract does not admit one. kin-openapi fills a
// property's default for null as for absence, so {"cron": null} would pass
// as the default; only absence takes the default. Whether null is admitted
// is kin-openapi's own answer for the property's schema (nullable, or an
// xOf branch that admits it).
func nullsRefused(r *http.Request, op *openapi3.Operation) domain.Invalids {
	body, ok := decodedJSON(r)
	if op.RequestBody == nil || op.RequestBody.Value == nil || !ok {
		return nil // not JSON: validation says so
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	content := op.RequestBody.Value.Content.Get(mt)
	if content == nil || content.Schema == nil || mt != "application/json" {
		return nil
	}
	var bad domain.Invalids
	refuseNulls([]*openapi3.SchemaRef{content.Schema}, body.value, "", &bad)
	slices.SortFunc(bad, func(a, b *domain.Error) int { return cmp.Compare(a.Field, b.Field) })
	return bad
}

// withNulls joins the refused nulls to validation's error, whose own
// complaint about the same fields ("value is not nullable") they replace.
func withNulls(nulls domain.Invalids, err error) error {
	if err == nil {
		return nulls
	}
	invalid := requestInvalid(err)
	var others domain.Invalids
	if !errors.As(invalid, &others) {
		return invalid
	}
	out := slices.DeleteFunc(slices.Clone(others), func(e *domain.Error) bool {
		return slices.ContainsFunc(nulls, func(n *domain.Error) bool { return n.Field == e.Field })
	})
	return append(out, nulls...)
}

// refuseNulls walks v with every schema that may describe it (the branches
// of allOf, oneOf and anyOf taken together): a null property is refused
// only when none of its declarations admits null.
func refuseNulls(schemas []*openapi3.SchemaRef, v any, path string, bad *domain.Invalids) {
	schemas = expand(schemas, nil, map[*openapi3.Schema]bool{})
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			decl := declarations(schemas, k)
			if len(decl) == 0 {
				continue
			}
			at := joinPath(path, k)
			if e == nil {
				if !slices.ContainsFunc(decl, admitsNull) {
					*bad = append(*bad, domain.Invalid(at, "must not be null"))
				}
				continue
			}
			refuseNulls(decl, e, at, bad)
		}
	case []any:
		var items []*openapi3.SchemaRef
		for _, s := range schemas {
			if s.Value.Items != nil {
				items = append(items, s.Value.Items)
			}
		}
		for i, e := range t {
			if e == nil {
				continue // an array's items are validated by kin-openapi, defaults play no part
			}
			refuseNulls(items, e, joinPath(path, strconv.Itoa(i)), bad)
		}
	}
}

// expand adds the branches of every composite schema to the list.
func expand(schemas, out []*openapi3.SchemaRef, seen map[*openapi3.Schema]bool) []*openapi3.SchemaRef {
	for _, s := range schemas {
		if s == nil || s.Value == nil || seen[s.Value] {
			continue
		}
		seen[s.Value] = true
		out = append(out, s)
		for _, branches := range []openapi3.SchemaRefs{s.Value.AllOf, s.Value.OneOf, s.Value.AnyOf} {
			out = expand(branches, out, seen)
		}
	}
	return out
}

// declarations are the schemas the given ones declare for property k:
// its own, or the additional properties' when it has none. ReadOnly
// properties are ignored in a request, null included.
func declarations(schemas []*openapi3.SchemaRef, k string) []*openapi3.SchemaRef {
	var out []*openapi3.SchemaRef
	for _, s := range schemas {
		if p, ok := s.Value.Properties[k]; ok && p.Value != nil {
			if p.Value.ReadOnly {
				return nil
			}
			out = append(out, p)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, s := range schemas {
		if a := s.Value.AdditionalProperties.Schema; a != nil && a.Value != nil {
			out = append(out, a)
		}
	}
	return out
}

func admitsNull(s *openapi3.SchemaRef) bool {
	return s.Value.VisitJSON(nil, openapi3.VisitAsRequest(), openapi3.DisableReadOnlyValidation()) == nil
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
