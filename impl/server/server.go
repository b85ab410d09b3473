// Package server assembles both API releases on one echo instance, with
// errors rendered in the shape of the release that owns the path, whatever
// went wrong.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/docs"
	"github.com/validator-manager/validator-manager/impl/live"
	"github.com/validator-manager/validator-manager/impl/telemetry"
	"github.com/validator-manager/validator-manager/openapi"
)

// Base paths of the two releases.
const (
	ManagementBase = "/api"
	PlatformBase   = "/api/v1"
)

// Options is what the server is assembled from.
type Options struct {
	Logger     *slog.Logger
	Verifier   *auth.Verifier
	Management managementapi.StrictServerInterface
	Platform   platformapi.StrictServerInterface
	// Plain and ManagementPlain serve release 2.0's and 1.11's operations (by
	// operationId) that a strict handler cannot: the console, the watch streams.
	Plain           map[string]PlainHandler
	ManagementPlain map[string]PlainHandler
	Docs            *docs.Docs
	MaxBodyBytes    int64
	MaxUploadBytes  int64
	RequestTimeout  time.Duration
	// BodyReadTimeout bounds each read of a request body (slow clients);
	// zero means none.
	BodyReadTimeout time.Duration
	// UploadTimeout bounds the arrival of a whole multipart upload (the
	// upstream call it streams into has the same bound); zero means none.
	UploadTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers (431 beyond).
	MaxHeaderBytes int
	// Metrics counts and times every operation's requests.
	Metrics *telemetry.Metrics
	// Audit stores the audit entries of mutating calls of both releases
	// (they are logged too).
	Audit Auditor
	// Public names operations served without a token although the contract
	// protects them (getPrometheus with api.metrics.public).
	Public []string
}

// Server is the HTTP server of both releases.
type Server struct {
	handler    http.Handler
	maxHeader  int
	log        *slog.Logger
	management *release
	platform   *release
	// routes is the release of each route's path, as mounted.
	routes map[string]*release
}

// The contracts are parsed once per process and shared by every server in it:
// parsing is most of a server's start-up, and validation only reads them.
var (
	managementContract = sync.OnceValues(openapi.Management)
	platformContract   = sync.OnceValues(openapi.Platform)
)

// Contracts returns the two OpenAPI documents the server is built from. The
// first call parses both at once; callers must not change them.
func Contracts() (mgmt, plat *openapi3.T, err error) {
	var perr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		plat, perr = platformContract()
	}()
	mgmt, err = managementContract()
	<-done
	if err != nil {
		return nil, nil, fmt.Errorf("release 1.11 contract: %w", err)
	}
	if perr != nil {
		return nil, nil, fmt.Errorf("release 2.0 contract: %w", perr)
	}
	return mgmt, plat, nil
}

// New assembles the server.
func New(o Options) (*Server, error) {
	mgmtDoc, platDoc, err := Contracts()
	if err != nil {
		return nil, err
	}
	s := &Server{
		log:        o.Logger,
		maxHeader:  o.MaxHeaderBytes,
		management: &release{name: "1.11", doc: mgmtDoc, render: renderManagement(o.Logger)},
		platform:   &release{name: "2.0", doc: platDoc, render: renderPlatform(o.Logger)},
		routes:     map[string]*release{},
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	s.handler = bodyDeadline(e, o.BodyReadTimeout, o.RequestTimeout, o.UploadTimeout)
	// The middlewares of every request, routed or not, chained once: echo
	// would apply them again at every request.
	every := chain(func(c echo.Context) error { return c.Handler()(c) },
		requestIDs(),
		s.logRequests(),
		limitHeaders(o.MaxHeaderBytes),
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				s.log.ErrorContext(c.Request().Context(), "panic", "request_id", requestID(c), "error", err, "stack", string(stack))
				return fmt.Errorf("panic: %w", err)
			},
		}),
	)
	e.Use(func(echo.HandlerFunc) echo.HandlerFunc { return every })

	managementapi.RegisterHandlersWithBaseURL(mount{e: e, rel: s.management, routes: s.routes, o: &o, plain: o.ManagementPlain},
		managementapi.NewStrictHandler(o.Management, nil), "")
	platformapi.RegisterHandlersWithBaseURL(mount{e: e, rel: s.platform, routes: s.routes, o: &o, plain: o.Plain},
		platformapi.NewStrictHandler(o.Platform, nil), "")
	// A request that matched no route renders in the release whose paths its
	// URL is under, so each route's own release must be that one.
	for path, rel := range s.routes {
		if s.owner(path) != rel {
			return nil, fmt.Errorf("route %s of release %s is under the paths of release %s", path, rel.name, s.owner(path).name)
		}
	}

	// The interactive page's scripts and styles; the page itself is an
	// operation of the 2.0 contract.
	e.GET(docs.AssetsPrefix+"*", assets(o.Docs.Assets))
	e.HEAD(docs.AssetsPrefix+"*", assets(o.Docs.Assets))
	return s, nil
}

// assets serves the page's files; a path that names none (`/docs-ui/../x`,
// a missing file) is answered in the release's shape, not in net/http's
// plain text.
func assets(h http.Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		w := &notFoundCatcher{ResponseWriter: c.Response().Writer}
		h.ServeHTTP(w, c.Request())
		if w.notFound {
			return echo.ErrNotFound
		}
		return nil
	}
}

// notFoundCatcher holds back a 404 and its body, so that the caller can
// answer it in its own shape.
type notFoundCatcher struct {
	http.ResponseWriter
	notFound, wrote bool
}

func (w *notFoundCatcher) WriteHeader(code int) {
	if code == http.StatusNotFound && !w.wrote {
		w.notFound = true
		for _, k := range []string{"Content-Type", "X-Content-Type-Options"} {
			w.Header().Del(k)
		}
		return
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *notFoundCatcher) Write(b []byte) (int, error) {
	if w.notFound {
		return len(b), nil
	}
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *notFoundCatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP makes the server usable in-process (tests, httptest).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Serve answers on ln until ctx ends, then lets requests in flight finish
// for at most grace.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Far above MaxHeaderBytes, which answers 431 in the release's
		// shape; net/http's own 431 is plain text.
		MaxHeaderBytes: max(16*s.maxHeader, 1<<20),
		IdleTimeout:    2 * time.Minute,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// The watch streams size their connections' send buffers.
		ConnContext: live.ConnContext,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handleError renders every error in the shape of the release that owns the
// request: the matched route's release, else the one whose paths the URL is
// under (unknown paths outside /api belong to 2.0, which owns the root).
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	rel := s.routes[c.Path()]
	if rel == nil {
		rel = s.owner(c.Request().URL.Path)
	}
	if rerr := rel.render(c, err); rerr != nil {
		s.log.WarnContext(c.Request().Context(), "writing error response", "request_id", requestID(c), "error", rerr)
	}
}

func (s *Server) owner(path string) *release {
	under := func(base string) bool { return path == base || strings.HasPrefix(path, base+"/") }
	if under(ManagementBase) && !under(PlatformBase) && !under("/api/ws") {
		return s.management
	}
	return s.platform
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// logRequests writes one structured line per request. It logs the path, never
// the query, headers or bodies: they can carry tokens and secrets.
func (s *Server) logRequests() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus:    true,
		LogMethod:    true,
		LogURIPath:   true,
		LogLatency:   true,
		LogRequestID: true,
		HandleError:  true, // render the error first, so the logged status is the one sent
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			// 501 is an expected answer of this server version, and health's
			// 503 its report (DOWN while the caches sync): neither is a failure.
			report := v.Status == http.StatusNotImplemented || v.Status == http.StatusServiceUnavailable && v.URIPath == "/actuator/health"
			if v.Status >= 500 && !report {
				level = slog.LevelError
			}
			if !s.log.Enabled(c.Request().Context(), level) {
				return nil // at WARN, as servers under load run: not even the line's fields
			}
			s.log.LogAttrs(c.Request().Context(), level, "request",
				slog.String("request_id", v.RequestID),
				slog.String("method", v.Method),
				slog.String("path", v.URIPath),
				slog.Int("status", v.Status),
				slog.Float64("latency_ms", float64(v.Latency.Microseconds())/1000),
			)
			return nil
		},
	})
}
