package server

import (
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// release is one API release served by this process: its contract, where it
// is mounted and how it renders errors.
type release struct {
	name string
	doc  *openapi3.T
	// render writes err in the release's error shape.
	render func(c echo.Context, err error) error
}

// mount is the echo router handed to a generated RegisterHandlersWithBaseURL:
// each route gets the middlewares its operation's contract implies.
type mount struct {
	e   *echo.Echo
	rel *release
	// routes is the release of each route path (shared by both mounts).
	routes map[string]*release
	o      *Options
	// plain serves operations by operationId instead of the generated strict
	// handler, which never sees the connection a WebSocket upgrade needs.
	plain map[string]PlainHandler
}

// PlainHandler serves one operation on the raw request; a returned error is
// rendered in the release's shape (when nothing was written yet).
type PlainHandler func(w http.ResponseWriter, r *http.Request) error

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
	mws := []echo.MiddlewareFunc{instrument(m.o.Metrics, op.OperationID)}
	limit := m.o.MaxBodyBytes
	if streams {
		limit = m.o.MaxUploadBytes
	}
	mws = append(mws, middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{
		Limit: strconv.FormatInt(limit, 10),
		// A request without a body has nothing to limit; it keeps
		// http.NoBody, which checkBody then reads no further.
		Skipper: func(c echo.Context) bool { return c.Request().Body == nil || c.Request().Body == http.NoBody },
	}))
	public := op.Security != nil && len(*op.Security) == 0 || slices.Contains(m.o.Public, op.OperationID)
	need, err := requiredRole(op)
	if err != nil {
		panic("server: " + m.rel.name + " contract: " + err.Error())
	}
	if !public {
		mws = append(mws, authenticate(m.o.Verifier))
	}
	if !public && method != http.MethodGet && method != http.MethodHead {
		field, _ := op.Extensions[auditValidatorKey].(string)
		mws = append(mws, audit(m.o.Logger, m.o.Audit, op.OperationID, field))
	}
	if !public && m.o.Verifier.RolesOn() {
		mws = append(mws, authorize(op.OperationID, need))
	}
	if form, _ := op.Extensions["x-form-parameters"].(bool); form {
		mws = append(mws, formToQuery(singleValued(route)))
	}
	mws = append(mws, validate(route, streams))
	if !streams && m.o.RequestTimeout > 0 {
		mws = append(mws, middleware.ContextTimeout(m.o.RequestTimeout))
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
// request deadline does not cut: uploads, the WebSocket console and the
// watch streams.
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

// formToQuery lets an operation whose contract says `x-form-parameters` take
// its query parameters as a form body too, as Spring's @RequestParam does. A
// parameter of single that the query has keeps the query's value, or
// validation would refuse it as given twice.
func formToQuery(single []string) echo.MiddlewareFunc {
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
				if q.Has(k) && slices.Contains(single, k) {
					continue
				}
				q[k] = append(q[k], vs...)
			}
			r.URL.RawQuery = q.Encode()
			r.Body, r.ContentLength = http.NoBody, 0
			r.Header.Del("Content-Type")
			return next(c)
		}
	}
}
