package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
	echomiddleware "github.com/oapi-codegen/echo-middleware"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// validate checks a request before its handler sees it: first what no
// operation accepts (checkInput), then the operation's contract. Streamed
// bodies are not buffered for validation; their handlers check what they read.
func validate(route *routers.Route, streams bool) echo.MiddlewareFunc {
	// Authentication is the authenticate middleware's job; kin-openapi's
	// security check would read the whole body into memory.
	op := *route.Operation
	op.Security = &openapi3.SecurityRequirements{}
	unsecured := *route
	unsecured.Operation = &op
	route = &unsecured
	single := singleValued(route)
	opts := &echomiddleware.Options{
		Options: openapi3filter.Options{
			MultiError:         true,
			ExcludeRequestBody: streams,
			// Read-only fields sent back (a GET sent back through PUT) are
			// accepted and ignored: the handlers never read them.
			ExcludeReadOnlyValidations: true,
			// The generated strict handlers bind the validated document
			// (defaults filled) instead of decoding the body again.
			KeepValidatedValue: true,
		},
		MultiErrorHandler: func(me openapi3.MultiError) *echo.HTTPError {
			return &echo.HTTPError{Code: http.StatusBadRequest, Internal: me}
		},
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			nulls, err := checkInput(c, route.Operation, single, streams)
			if err != nil {
				return err
			}
			if he := echomiddleware.ValidateRequestFromContext(c, routed{route, c}, opts); he != nil {
				if he.Code != http.StatusBadRequest {
					return he
				}
				err := requestInvalid(he)
				if invalid, ok := err.(domain.Invalids); ok && len(nulls) > 0 {
					return append(invalid, nulls...)
				}
				return err
			}
			if len(nulls) > 0 {
				return nulls
			}
			if streams {
				if err := checkContentType(c.Request(), route.Operation); err != nil {
					return err
				}
			}
			return next(c)
		}
	}
}

// singleValued names the query parameters of route that take one value.
func singleValued(route *routers.Route) []string {
	var single []string
	for _, p := range append(slices.Clone(route.PathItem.Parameters), route.Operation.Parameters...) {
		if s := p.Value.Schema; p.Value.In == openapi3.ParameterInQuery && (s == nil || !s.Value.Type.Is(openapi3.TypeArray)) {
			single = append(single, p.Value.Name)
		}
	}
	return single
}

// routed answers the validator with the route echo matched: the middleware's
// own router would cost a second match and knows no HEAD, served as GET.
type routed struct {
	route *routers.Route
	c     echo.Context
}

func (r routed) FindRoute(*http.Request) (*routers.Route, map[string]string, error) {
	names, values := r.c.ParamNames(), r.c.ParamValues()
	params := make(map[string]string, len(names))
	for i, n := range names {
		params[n] = values[i]
	}
	return r.route, params, nil
}

// bodyKey is the echo context key of a JSON request body as decoded by
// checkBody (the audit reads the validator's name from it).
const bodyKey = "server.body"

// checkInput refuses inputs that no operation accepts: path and query values
// that are not UTF-8 or hold a NUL (PostgreSQL refuses both, SQLite stores
// them), a single-valued query parameter given twice, and what checkBody
// refuses. It returns checkBody's nulls.
func checkInput(c echo.Context, op *openapi3.Operation, single []string, streams bool) (domain.Invalids, error) {
	var bad domain.Invalids
	names, values := c.ParamNames(), c.ParamValues()
	for i, n := range names {
		v, err := url.PathUnescape(values[i])
		if err != nil {
			v = values[i]
		}
		if msg := badText(v); msg != "" {
			bad = append(bad, domain.Invalid(n, "%s", msg))
		}
	}
	q, err := url.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		bad = append(bad, domain.Invalid("query", "is not a valid query string (percent-encoding or separators)"))
	}
	for k, vs := range q { // what parsed, when not all did
		if msg := badText(k); msg != "" {
			bad = append(bad, domain.Invalid("query", "a parameter name %s", msg))
			continue
		}
		if i := slices.IndexFunc(vs, func(v string) bool { return badText(v) != "" }); i >= 0 {
			bad = append(bad, domain.Invalid(k, "%s", badText(vs[i])))
		} else if len(vs) > 1 && slices.Contains(single, k) {
			// Which value was meant is not ours to guess.
			bad = append(bad, domain.Invalid(k, "must be given once, got %d values", len(vs)))
		}
	}
	if len(bad) > 0 {
		return nil, bad
	}
	if streams {
		return nil, nil
	}
	return checkBody(c, op)
}

// badText says what is wrong with a text value, or "".
func badText(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL characters"
	}
	return ""
}

// checkBody reads a buffered body whole, so that an oversized one is a 413
// whether or not it announced its length, and refuses JSON bodies that are
// not UTF-8, hold a NUL in a string or have content after the document.
// It returns the properties sent as null that have a default: kin-openapi
// fills a default for null as for absence, and only absence may take it
// (no property admits null and has a default: TestNoNullableDefault).
func checkBody(c echo.Context, op *openapi3.Operation) (domain.Invalids, error) {
	r := c.Request()
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	raw, err := readBody(r)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") || len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if !utf8.Valid(raw) {
		return nil, domain.Invalid("body", "must be valid UTF-8")
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		if errors.Is(err, errTrailing) {
			return nil, domain.Invalid("body", "has content after the JSON document")
		}
		return nil, nil // not JSON: validation says so in the release's words
	}
	c.Set(bodyKey, doc)
	var bad domain.Invalids
	var nulls bool
	walkJSON(doc, nil, "", func(path string, v, _ any) {
		if s, ok := v.(string); ok && strings.IndexByte(s, 0) >= 0 {
			bad = append(bad, domain.Invalid(cmp.Or(path, "body"), "must not contain NUL characters"))
		}
		nulls = nulls || v == nil
	})
	if len(bad) > 0 {
		return nil, bad
	}
	var content *openapi3.MediaType
	if op.RequestBody != nil {
		content = op.RequestBody.Value.Content.Get(mt)
	}
	if !nulls || content == nil || content.Schema == nil {
		return nil, nil
	}
	filled, _ := decodeJSON(raw)
	_ = content.Schema.Value.VisitJSON(filled, openapi3.VisitAsRequest(), openapi3.MultiErrors(),
		openapi3.DisableReadOnlyValidation(), openapi3.DefaultsSet(func() {}))
	walkJSON(doc, filled, "", func(path string, v, filled any) {
		if v == nil && filled != nil {
			bad = append(bad, domain.Invalid(path, "must not be null"))
		}
	})
	return bad, nil
}

var errTrailing = errors.New("content after the JSON document")

// decodeJSON decodes one JSON document as kin-openapi does (numbers kept as
// json.Number), and nothing after it.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errTrailing
	}
	return doc, nil
}

// walkJSON calls f with every value of a decoded JSON document (and every
// member name, as a string), its dotted path, and the value at the same path
// in other (nil where other has none).
func walkJSON(v, other any, path string, f func(path string, v, other any)) {
	f(path, v, other)
	switch t := v.(type) {
	case map[string]any:
		o, _ := other.(map[string]any)
		for k, e := range t {
			f(joinPath(path, k), k, nil)
			walkJSON(e, o[k], joinPath(path, k), f)
		}
	case []any:
		o, _ := other.([]any)
		for i, e := range t {
			var oe any
			if i < len(o) {
				oe = o[i]
			}
			walkJSON(e, oe, joinPath(path, strconv.Itoa(i)), f)
		}
	}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// checkContentType does for a streamed body what validation does for the
// others: the media type must be one the operation declares.
func checkContentType(r *http.Request, op *openapi3.Operation) error {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && op.RequestBody.Value.Content.Get(mt) != nil {
		if strings.HasPrefix(mt, "multipart/") && params["boundary"] == "" {
			// Without it no part can be found; the generated handler's
			// reader would fail as if the server had.
			return domain.Invalid("body", "Content-Type %s needs a boundary parameter (e.g. %s; boundary=x)", mt, mt)
		}
		return nil
	}
	want := slices.Sorted(maps.Keys(op.RequestBody.Value.Content))
	return domain.Invalid("body", "Content-Type %q is not accepted; send %s", r.Header.Get("Content-Type"), strings.Join(want, " or "))
}
