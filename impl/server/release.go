package server

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/telemetry"
)

// release is one API release served by this process: its contract, where it
// is mounted and how it renders errors.
type release struct {
	name string
	doc  *openapi3.T
	// render writes err in the release's error shape.
	render func(c echo.Context, err error) error
}

// mount is the echo router handed to a generated RegisterHandlersWithBaseURL.
// It satisfies the EchoRouter interface of every generated package. Both
// contracts have the root as their server and full paths, so each route is
// mounted at its path as written, and gets the middlewares that the
// contract implies for its operation: authentication unless `security: []`,
// a body limit, request validation and a deadline.
type mount struct {
	e   *echo.Echo
	rel *release
	// routes is the release of each route path (shared by both mounts).
	routes   map[string]*release
	verifier *auth.Verifier
	limits   limits
	// plain serves operations by operationId with a handler of their own
	// instead of the generated strict one: a WebSocket upgrade needs the
	// connection, which a strict handler never sees. The route keeps every
	// middleware above.
	plain map[string]PlainHandler
	obs   observers
}

// observers are the middlewares that watch requests rather than serve them.
type observers struct {
	metrics *telemetry.Metrics
	log     *slog.Logger
	// audit is set on the release whose mutating operations are audited.
	audit   bool
	auditor Auditor
	public  []string
}

func (o observers) audited(a Auditor) observers {
	o.audit, o.auditor = true, a
	return o
}

// PlainHandler serves one operation on the raw request; a returned error is
// rendered in the release's shape (when nothing was written yet).
type PlainHandler func(w http.ResponseWriter, r *http.Request) error

type limits struct {
	body, upload int64
	timeout      func(op *openapi3.Operation) echo.MiddlewareFunc
}

var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

func (m mount) add(method, path string, h echo.HandlerFunc, extra ...echo.MiddlewareFunc) *echo.Route {
	specPath := echoParam.ReplaceAllString(path, "{$1}")
	item := m.rel.doc.Paths.Value(specPath)
	if item == nil || item.GetOperation(method) == nil {
		panic("server: generated route " + method + " " + specPath + " is not in the " + m.rel.name + " contract")
	}
	op := item.GetOperation(method)
	route := &routers.Route{Spec: m.rel.doc, Path: specPath, PathItem: item, Method: method, Operation: op}
	streams := isStream(op)

	// Errors after routing render in the route's release (handleError).
	m.routes[path] = m.rel
	var mws []echo.MiddlewareFunc
	if m.obs.metrics != nil {
		mws = append(mws, instrument(m.obs.metrics, op.OperationID))
	}
	limit := m.limits.body
	if streams {
		limit = m.limits.upload
	}
	mws = append(mws, middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{
		Limit: strconv.FormatInt(limit, 10),
		// A request without a body has nothing to limit; it keeps
		// http.NoBody, which checkInput then reads no further.
		Skipper: func(c echo.Context) bool { return c.Request().Body == nil || c.Request().Body == http.NoBody },
	}))
	public := op.Security != nil && len(*op.Security) == 0 || slices.Contains(m.obs.public, op.OperationID)
	need, err := requiredRole(op)
	if err != nil {
		panic("server: " + m.rel.name + " contract: " + err.Error())
	}
	if !public {
		mws = append(mws, authenticate(m.verifier))
	}
	if m.obs.audit && !public && method != http.MethodGet && method != http.MethodHead {
		field, _ := op.Extensions[auditValidatorKey].(string)
		mws = append(mws, audit(m.obs.log, m.obs.auditor, op.OperationID, field))
	}
	if !public && m.verifier.RolesOn() {
		mws = append(mws, authorize(op.OperationID, need))
	}
	if form, _ := op.Extensions["x-form-parameters"].(bool); form {
		mws = append(mws, formToQuery())
	}
	mws = append(mws, validate(route, streams))
	if !streams && m.limits.timeout != nil {
		mws = append(mws, m.limits.timeout(op))
	}
	mws = append(mws, extra...)
	if plain, ok := m.plain[op.OperationID]; ok {
		h = func(c echo.Context) error { return plain(c.Response(), c.Request()) }
	}
	// The chain is made once: echo would apply a route's middlewares to its
	// handler again at every request.
	h = chain(h, mws...)
	if method == http.MethodGet {
		// HEAD is GET without the body (net/http drops it), as Spring answers it.
		m.e.Add(http.MethodHead, path, h)
	}
	return m.e.Add(method, path, h)
}

// chain wraps h in mws, the first outermost, as echo applies middlewares.
func chain(h echo.HandlerFunc, mws ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// isStream tells operations whose bodies are not buffered and that the
// request deadline does not cut: uploads (multipart), the WebSocket console
// (101 response) and the watch streams (Server-Sent Events, which end when
// the client leaves or the server shuts down).
func isStream(op *openapi3.Operation) bool {
	if op.RequestBody != nil && op.RequestBody.Value != nil && op.RequestBody.Value.Content.Get("multipart/form-data") != nil {
		return true
	}
	if op.Responses == nil {
		return false
	}
	if ok := op.Responses.Value("200"); ok != nil && ok.Value != nil && ok.Value.Content.Get("text/event-stream") != nil {
		return true
	}
	return op.Responses.Value("101") != nil
}

func (m mount) CONNECT(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodConnect, p, h, mw...)
}
func (m mount) DELETE(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodDelete, p, h, mw...)
}
func (m mount) GET(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodGet, p, h, mw...)
}
func (m mount) HEAD(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodHead, p, h, mw...)
}
func (m mount) OPTIONS(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodOptions, p, h, mw...)
}
func (m mount) PATCH(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodPatch, p, h, mw...)
}
func (m mount) POST(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodPost, p, h, mw...)
}
func (m mount) PUT(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodPut, p, h, mw...)
}
func (m mount) TRACE(p string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) *echo.Route {
	return m.add(http.MethodTrace, p, h, mw...)
}

// validate checks the request's input (checkInput) and then the request
// against the operation's contract before the handler sees it. Streamed bodies are not buffered for validation; their
// handlers check what they read.
func validate(route *routers.Route, streams bool) echo.MiddlewareFunc {
	// Authentication is the authenticate middleware's job. kin-openapi
	// checks security requirements by reading the whole body into memory
	// (for authentication functions that read it): an empty requirement
	// list skips that, so an upload streams as it arrives.
	noSecurity := *route.Operation
	noSecurity.Security = &openapi3.SecurityRequirements{}
	unsecured := *route
	unsecured.Operation = &noSecurity
	route = &unsecured
	single := singleValued(route)
	opts := &openapi3filter.Options{
		MultiError:         true,
		ExcludeRequestBody: streams,
		// Read-only fields sent back (a GET sent back through PUT) are
		// accepted and ignored: the handlers never read them.
		ExcludeReadOnlyValidations: true,
		AuthenticationFunc:         func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
	}
	paramsOnly := *opts
	paramsOnly.ExcludeRequestBody = true
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			query, err := checkInput(c, streams)
			if err != nil {
				return err
			}
			names, values := c.ParamNames(), c.ParamValues()
			params := make(map[string]string, len(names))
			for i, n := range names {
				if v, err := url.PathUnescape(values[i]); err == nil {
					params[n] = v
				} else {
					params[n] = values[i]
				}
			}
			in := &openapi3filter.RequestValidationInput{
				Request:     c.Request(),
				PathParams:  params,
				QueryParams: query,
				Route:       route,
				Options:     opts,
			}
			if err := repeated(query, single); err != nil {
				return err
			}
			var nulls domain.Invalids
			if !streams {
				nulls = nullsRefused(c.Request(), route.Operation)
			}
			if err := validateRequest(c.Request().Context(), in, &paramsOnly); err != nil || len(nulls) > 0 {
				return withNulls(nulls, err)
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

// validateRequest is openapi3filter.ValidateRequest without a second decode
// of a JSON body the operation declares: its parameters are validated by
// kin-openapi, the body's document (decoded once by checkBody) by its
// schema, with the options and in the error shape ValidateRequestBody
// uses. Other bodies (empty, not JSON, undeclared) go to kin-openapi whole.
func validateRequest(ctx context.Context, in *openapi3filter.RequestValidationInput, paramsOnly *openapi3filter.Options) error {
	body, ok := decodedJSON(in.Request)
	rb := in.Route.Operation.RequestBody
	var content *openapi3.MediaType
	if ok && rb != nil && rb.Value != nil {
		content = rb.Value.Content.Get(in.Request.Header.Get("Content-Type"))
	}
	if content == nil || content.Schema == nil || content.Schema.Value == nil {
		return openapi3filter.ValidateRequest(ctx, in)
	}
	params := *in
	params.Options = paramsOnly
	var all openapi3.MultiError
	if err := openapi3filter.ValidateRequest(ctx, &params); err != nil {
		var me openapi3.MultiError
		if !errors.As(err, &me) {
			me = openapi3.MultiError{err}
		}
		all = append(all, me...)
	}
	if err := validateBody(in, rb.Value, content, body); err != nil {
		all = append(all, err)
	}
	if len(all) > 0 {
		return all
	}
	return nil
}

// validateBody validates the decoded document against the body's schema and
// fills its defaults in place, as ValidateRequestBody does with in.Options.
func validateBody(in *openapi3filter.RequestValidationInput, rb *openapi3.RequestBody, content *openapi3.MediaType, body *decodedBody) error {
	o := in.Options
	opts := []openapi3.SchemaValidationOption{openapi3.VisitAsRequest()}
	if !o.SkipSettingDefaults {
		opts = append(opts, openapi3.DefaultsSet(func() { body.stale = true }))
	}
	if o.MultiError {
		opts = append(opts, openapi3.MultiErrors())
	}
	if o.ExcludeReadOnlyValidations {
		opts = append(opts, openapi3.DisableReadOnlyValidation())
	}
	if o.RegexCompiler != nil {
		opts = append(opts, openapi3.SetSchemaRegexCompiler(o.RegexCompiler))
	}
	opts = append(opts, o.SchemaValidationOptions...)
	if in.Route.Spec.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	if err := content.Schema.Value.VisitJSON(body.value, opts...); err != nil {
		id := strings.TrimSpace(content.Schema.Ref)
		if id == "" {
			id = strings.TrimSpace(content.Schema.Value.Title)
		}
		return &openapi3filter.RequestError{Input: in, RequestBody: rb, Reason: strings.TrimSpace("doesn't match schema " + id), Err: err}
	}
	return nil
}

// singleValued names the operation's query parameters that take one value
// (any schema but an array).
func singleValued(route *routers.Route) []string {
	var out []string
	params := append(slices.Clone(route.PathItem.Parameters), route.Operation.Parameters...)
	for _, p := range params {
		if p.Value == nil || p.Value.In != openapi3.ParameterInQuery {
			continue
		}
		if sch := p.Value.Schema; sch != nil && sch.Value != nil && sch.Value.Type.Is(openapi3.TypeArray) {
			continue
		}
		if !slices.Contains(out, p.Value.Name) {
			out = append(out, p.Value.Name)
		}
	}
	return out
}

// repeated refuses a single-valued query parameter given more than once:
// which value was meant is not ours to guess.
func repeated(q url.Values, single []string) error {
	if len(single) == 0 || len(q) == 0 {
		return nil
	}
	var bad domain.Invalids
	for _, name := range single {
		if n := len(q[name]); n > 1 {
			bad = append(bad, domain.Invalid(name, "must be given once, got %d values", n))
		}
	}
	if len(bad) > 0 {
		return bad
	}
	return nil
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
	want := make([]string, 0, len(op.RequestBody.Value.Content))
	for ct := range op.RequestBody.Value.Content {
		want = append(want, ct)
	}
	slices.Sort(want)
	return domain.Invalid("body", "Content-Type %q is not accepted; send %s", r.Header.Get("Content-Type"), strings.Join(want, " or "))
}

// formToQuery lets an operation whose contract says `x-form-parameters` take
// its query parameters as an application/x-www-form-urlencoded body too, as
// Spring's @RequestParam does: the form's values are appended to the query's,
// so validation and the handler see one set of parameters.
func formToQuery() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
				return next(c)
			}
			raw, err := readBody(r)
			if err != nil {
				return err
			}
			form, err := url.ParseQuery(string(raw))
			if err != nil {
				return domain.Invalid("body", "is not a valid application/x-www-form-urlencoded body")
			}
			q := r.URL.Query()
			for k, vs := range form {
				q[k] = append(q[k], vs...)
			}
			r.URL.RawQuery = q.Encode()
			r.Body, r.ContentLength = http.NoBody, 0
			r.Header.Del("Content-Type")
			return next(c)
		}
	}
}
