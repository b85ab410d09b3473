package apitest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/gen/upstream/scanapi"
	"github.com/validator-manager/validator-manager/gen/upstream/validatorapi"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// exchange is one request to a simulated upstream and its answer. The body of
// a binary request is nil.
type exchange struct {
	Upstream     string
	Request      *http.Request
	RequestBody  []byte
	Status       int
	Header       http.Header
	ResponseBody []byte
}

// ContractHook is a sandbox.Options.Wrap that checks every exchange against
// the published descriptions the clients are generated from (openapi/upstream/):
// the request and, for a 2xx answer, the response; an error answer must be the
// upstream's error shape (JsCantonError for the ledger, ErrorResponse for
// Splice). Token requests are not described there and pass. report gets each
// violation.
func ContractHook(report func(string)) (func(string, http.Handler) http.Handler, error) {
	docs := map[string]*upstreamDoc{}
	for up, load := range map[string]func() (*openapi3.T, error){
		upstream.Ledger: ledgerapi.GetSwagger, upstream.Scan: scanapi.GetSwagger, upstream.ValidatorApp: validatorapi.GetSwagger,
	} {
		d, err := newUpstreamDoc(load)
		if err != nil {
			return nil, fmt.Errorf("%s description: %w", up, err)
		}
		docs[up] = d
	}
	errShape := map[string]string{upstream.Ledger: "JsCantonError", upstream.Scan: "ErrorResponse", upstream.ValidatorApp: "ErrorResponse"}
	var mu sync.Mutex
	check := func(x exchange) {
		// The token endpoints and OIDC discovery are the IdP's, the
		// discovery route the sandbox's own: neither is scan's.
		if p := x.Request.URL.Path; p == "/oauth2/token" || strings.HasPrefix(p, "/.well-known/") || strings.HasPrefix(p, "/realms/") || strings.HasPrefix(p, sandbox.DiscoveryPath) {
			return
		}
		d := docs[x.Upstream]
		if problem := d.check(x, errShape[x.Upstream]); problem != "" {
			mu.Lock()
			defer mu.Unlock()
			report(fmt.Sprintf("%s %s %s -> %d breaks the published description: %s\nrequest: %s\nresponse: %s", x.Upstream, x.Request.Method, x.Request.URL.Path, x.Status, problem, truncate(x.RequestBody), truncate(x.ResponseBody)))
		}
	}
	// The answer is held until the handler is done, then checked.
	return func(up string, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body []byte
			if r.Header.Get("Content-Type") != "application/octet-stream" {
				body, _ = io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			maps.Copy(w.Header(), rec.Header())
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			r.Body = io.NopCloser(bytes.NewReader(body))
			check(exchange{Upstream: up, Request: r, RequestBody: body, Status: rec.Code, Header: rec.Header(), ResponseBody: rec.Body.Bytes()})
		})
	}, nil
}

type upstreamDoc struct {
	doc    *openapi3.T
	prefix string
	router routers.Router
}

func newUpstreamDoc(load func() (*openapi3.T, error)) (*upstreamDoc, error) {
	doc, err := load()
	if err != nil {
		return nil, err
	}
	d := &upstreamDoc{doc: doc}
	if len(doc.Servers) > 0 {
		d.prefix = strings.TrimSuffix(doc.Servers[0].URL, "/")
	}
	routed := *doc // the router matches paths without the servers' prefix
	routed.Servers = nil
	if d.router, err = gorillamux.NewRouter(&routed); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *upstreamDoc) check(x exchange, errShape string) string {
	req := x.Request.Clone(context.Background())
	req.URL.Path = strings.TrimPrefix(req.URL.Path, d.prefix)
	req.URL.RawPath = ""
	if len(x.RequestBody) > 0 && req.Header.Get("Content-Type") == "" {
		// A JSON body without a Content-Type is read as JSON (Canton's
		// TypeScript ledger client sends none, and its ledger accepts that).
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := d.router.FindRoute(req)
	if err != nil {
		return "no operation of the description: " + err.Error()
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if x.RequestBody != nil {
		req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	} else {
		opts.ExcludeRequestBody = true
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return "request: " + err.Error()
	}
	if x.Status/100 != 2 {
		if len(x.ResponseBody) == 0 {
			return "an error answer without a body"
		}
		var v any
		if err := json.Unmarshal(x.ResponseBody, &v); err != nil {
			return "error body is not JSON"
		}
		if err := d.doc.Components.Schemas[errShape].Value.VisitJSON(v); err != nil {
			return "error body is not a " + errShape + ": " + err.Error()
		}
		return ""
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.Status, Header: x.Header,
		Body: io.NopCloser(bytes.NewReader(x.ResponseBody)), Options: opts}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return "response: " + err.Error()
	}
	return ""
}

// Archive builds a DALF: the Archive of a payload carrying the language
// version minor and the serialized package pkg. The field numbers are
// daml_lf.proto's (Archive: hash_function 1, payload 3, hash 4;
// ArchivePayload: minor 3, daml_lf_2 4).
func Archive(minor string, pkg []byte) []byte {
	var p []byte
	p = protowire.AppendTag(p, 4, protowire.BytesType)
	p = protowire.AppendBytes(p, pkg)
	p = protowire.AppendTag(p, 3, protowire.BytesType)
	p = protowire.AppendString(p, minor)
	sum := sha256.Sum256(p)
	var a []byte
	a = protowire.AppendTag(a, 1, protowire.VarintType)
	a = protowire.AppendVarint(a, 0)
	a = protowire.AppendTag(a, 3, protowire.BytesType)
	a = protowire.AppendBytes(a, p)
	a = protowire.AppendTag(a, 4, protowire.BytesType)
	a = protowire.AppendString(a, hex.EncodeToString(sum[:]))
	return a
}
