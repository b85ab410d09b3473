package server

import (
	"context"
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
)

// release is one API release served by this process: its contract, where it
// is mounted and how it renders errors.
type release struct {
	name string
	doc  *openapi3.T
	base string // mount point of paths without a path-level server
	// render writes err in the release's error shape.
	render func(c echo.Context, err error) error
}

// mount is the echo router handed to a generated RegisterHandlersWithBaseURL.
// It satisfies the EchoRouter interface of every generated package. Each route
// is mounted at its path-level server when the contract gives one (the public
// paths of 2.0), else at the release's base, and gets the middlewares that the
// contract implies for its operation: authentication unless `security: []`,
// a body limit, request validation and a deadline.
type mount struct {
	e        *echo.Echo
	rel      *release
	verifier *auth.Verifier
	limits   limits
	// plain serves operations by operationId with a handler of their own
	// instead of the generated strict one: a WebSocket upgrade needs the
	// connection, which a strict handler never sees. The route keeps every
	// middleware above.
	plain map[string]PlainHandler
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
	base := m.rel.base
	if len(item.Servers) > 0 {
		base = strings.TrimSuffix(item.Servers[0].URL, "/")
	}
	route := &routers.Route{Spec: m.rel.doc, Path: specPath, PathItem: item, Method: method, Operation: op}
	streams := isStream(op)

	mws := []echo.MiddlewareFunc{m.rel.bind()}
	limit := m.limits.body
	if streams {
		limit = m.limits.upload
	}
	mws = append(mws, middleware.BodyLimit(strconv.FormatInt(limit, 10)))
	if public := op.Security != nil && len(*op.Security) == 0; !public {
		mws = append(mws, authenticate(m.verifier))
	}
	mws = append(mws, validate(route, streams))
	if !streams && m.limits.timeout != nil {
		mws = append(mws, m.limits.timeout(op))
	}
	mws = append(mws, extra...)
	if plain, ok := m.plain[op.OperationID]; ok {
		h = func(c echo.Context) error { return plain(c.Response(), c.Request()) }
	}
	return m.e.Add(method, base+path, h, mws...)
}

// isStream tells operations whose bodies are not buffered: uploads
// (multipart) and the WebSocket console (101 response).
func isStream(op *openapi3.Operation) bool {
	if op.RequestBody != nil && op.RequestBody.Value != nil && op.RequestBody.Value.Content.Get("multipart/form-data") != nil {
		return true
	}
	return op.Responses != nil && op.Responses.Value("101") != nil
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

const releaseKey = "vm.release"

// bind marks the request as belonging to the release, so that every error
// after this point renders in its shape.
func (r *release) bind() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(releaseKey, r)
			return next(c)
		}
	}
}

// validate checks the request against the operation's contract before the
// handler sees it. Streamed bodies are not buffered for validation; their
// handlers check what they read.
func validate(route *routers.Route, streams bool) echo.MiddlewareFunc {
	opts := &openapi3filter.Options{
		MultiError:         true,
		ExcludeRequestBody: streams,
		// Authentication is the authenticate middleware's job.
		AuthenticationFunc: func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
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
				Request:    c.Request(),
				PathParams: params,
				Route:      route,
				Options:    opts,
			}
			if err := openapi3filter.ValidateRequest(c.Request().Context(), in); err != nil {
				return requestInvalid(err)
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

// checkContentType does for a streamed body what validation does for the
// others: the media type must be one the operation declares.
func checkContentType(r *http.Request, op *openapi3.Operation) error {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && op.RequestBody.Value.Content.Get(mt) != nil {
		return nil
	}
	want := make([]string, 0, len(op.RequestBody.Value.Content))
	for ct := range op.RequestBody.Value.Content {
		want = append(want, ct)
	}
	slices.Sort(want)
	return domain.Invalid("body", "Content-Type %q is not accepted; send %s", r.Header.Get("Content-Type"), strings.Join(want, " or "))
}
