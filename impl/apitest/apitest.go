// Package apitest is the contract-test harness: it runs the whole server
// in-process on the embedded default (SQLite, embedded cluster, development
// tokens, all in a temporary directory), hands out the generated typed
// clients, and validates every response they receive against the OpenAPI
// document of its release. A response that breaks the contract fails the test.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/openapi"
)

func init() {
	// The documentation page is HTML; its schema is a plain string.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
}

// Server is one in-process server with clients bound to it.
type Server struct {
	App *app.App
	// URL is the server's root, e.g. http://127.0.0.1:PORT.
	URL string
	// Token is a bearer token the server accepts (the development issuer's).
	Token string
	// HTTP is an unauthenticated client that validates every response.
	HTTP *http.Client
	// Management is the typed client of release 1.11 (/api), with the token.
	Management *managementapi.ClientWithResponses
	// Platform is the typed client of release 2.0 (/api/v1), with the token.
	Platform *platformapi.ClientWithResponses
	// Public is a release 2.0 client rooted at /, for the public paths
	// (actuator, documentation) that live outside /api/v1.
	Public *platformapi.ClientWithResponses
	logs   *Buffer
}

// Options adjusts the server a test starts.
type Options struct {
	// Config edits the configuration (DataDir is already a temporary directory).
	Config func(*config.Config)
	// App options, e.g. to replace a release's handlers.
	App []app.Option
}

// Start runs a server for the test and stops it when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	if o.Config != nil {
		o.Config(&cfg)
	}
	logs := &Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := app.Open(context.Background(), cfg, log, "test", o.App...)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	// What Run does before health reports UP, without the periodic work (the
	// tests move their clocks and sync phases themselves).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.StartCluster(ctx); err != nil {
		a.Close()
		t.Fatalf("start cluster: %v", err)
	}
	if err := a.Management.Reconciler().RunOnce(ctx); err != nil {
		a.Close()
		t.Fatalf("first reconcile: %v", err)
	}
	ts := httptest.NewServer(a.Server)
	t.Cleanup(func() {
		ts.Close()
		a.Close()
	})
	s := &Server{App: a, URL: ts.URL, logs: logs}
	if a.Issuer != nil {
		if s.Token, err = a.DevToken(); err != nil {
			t.Fatalf("token: %v", err)
		}
	}
	s.HTTP = &http.Client{Transport: NewValidator(t, http.DefaultTransport)}
	bearer := func(_ context.Context, req *http.Request) error {
		if s.Token != "" {
			req.Header.Set("Authorization", "Bearer "+s.Token)
		}
		return nil
	}
	if s.Management, err = managementapi.NewClientWithResponses(ts.URL+"/api", managementapi.WithHTTPClient(s.HTTP), managementapi.WithRequestEditorFn(bearer)); err != nil {
		t.Fatal(err)
	}
	if s.Platform, err = platformapi.NewClientWithResponses(ts.URL+"/api/v1", platformapi.WithHTTPClient(s.HTTP), platformapi.WithRequestEditorFn(bearer)); err != nil {
		t.Fatal(err)
	}
	if s.Public, err = platformapi.NewClientWithResponses(ts.URL, platformapi.WithHTTPClient(s.HTTP)); err != nil {
		t.Fatal(err)
	}
	return s
}

// Logs is everything the server logged so far.
func (s *Server) Logs() string { return s.logs.String() }

// Validator is an http.RoundTripper that checks each response against the
// contract of the release owning the request's path: status declared, body
// and headers matching the schema. Responses to paths of no operation must
// still carry the release's error shape.
type Validator struct {
	t    testing.TB
	base http.RoundTripper
	mgmt contract
	plat contract
}

type contract struct {
	doc    *openapi3.T
	router routers.Router
	base   string
}

// NewValidator wraps base.
func NewValidator(t testing.TB, base http.RoundTripper) *Validator {
	t.Helper()
	v := &Validator{t: t, base: base}
	var err error
	if v.mgmt, err = newContract(openapi.Management, "/api"); err != nil {
		t.Fatal(err)
	}
	if v.plat, err = newContract(openapi.Platform, "/api/v1"); err != nil {
		t.Fatal(err)
	}
	return v
}

// newContract routes on the paths as written: kin-openapi's routers do not
// honour path-level servers, so the mount point is stripped before routing.
func newContract(load func() (*openapi3.T, error), base string) (contract, error) {
	doc, err := load()
	if err != nil {
		return contract{}, err
	}
	routed, err := load()
	if err != nil {
		return contract{}, err
	}
	c := contract{doc: doc, base: base}
	routed.Servers = nil
	for _, item := range routed.Paths.Map() {
		item.Servers = nil
	}
	if c.router, err = gorillamux.NewRouter(routed); err != nil {
		return contract{}, err
	}
	return c, nil
}

// RoundTrip sends req and validates the response.
func (v *Validator) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := v.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if problem := v.check(req, resp, body); problem != "" {
		v.t.Errorf("%s %s -> %d breaks the contract: %s\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, problem, truncate(body))
	}
	return resp, nil
}

func (v *Validator) check(req *http.Request, resp *http.Response, body []byte) string {
	c, rel := v.owner(req.URL.Path)
	routed := req.Clone(req.Context())
	routed.URL.Path = rel
	routed.URL.RawPath = ""
	route, params, err := c.router.FindRoute(routed)
	if err != nil {
		return v.checkErrorShape(c, resp, body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return err.Error()
	}
	return ""
}

// owner picks the release that owns path and the path relative to its mount.
func (v *Validator) owner(path string) (contract, string) {
	if path == "/api" || strings.HasPrefix(path, "/api/") {
		if strings.HasPrefix(path, "/api/v1/") || path == "/api/v1" {
			return v.plat, strings.TrimPrefix(path, "/api/v1")
		}
		if !strings.HasPrefix(path, "/api/ws/") {
			return v.mgmt, strings.TrimPrefix(path, "/api")
		}
	}
	return v.plat, path
}

// checkErrorShape validates a response to a path of no operation: it must be
// an error in the release's shape (its `default` response schema).
func (v *Validator) checkErrorShape(c contract, resp *http.Response, body []byte) string {
	if resp.StatusCode < 400 {
		return "" // not an API path (docs assets)
	}
	name := "Error"
	if c.base == "/api" {
		name = "ErrorMap"
	}
	ref := c.doc.Components.Schemas[name]
	if ref == nil {
		return "contract has no schema " + name
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return "error body is not JSON: " + err.Error()
	}
	if err := ref.Value.VisitJSON(value); err != nil {
		return fmt.Sprintf("error body is not a %s: %v", name, err)
	}
	return ""
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// Buffer is a bytes.Buffer safe for concurrent writers (a server's logs).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
