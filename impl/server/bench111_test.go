package server_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// BenchmarkServeInProcess: the 1.11 list (50 items from anywhere in 1,000
// validators, from the store's rows in memory) and the cheap authenticated
// read (`make bench`'s: 1.11's list of remote participants, none
// registered: authentication, routing, validation, a count query), each
// served in process (no network: the server's own CPU per request) beside
// a bare echo handler with the same bearer check answering the same bytes,
// as `make bench` does over loopback, with the server logging at WARN as
// there. -cpuprofile of a run shows what the server spends beyond the
// baseline (focus on Server.ServeHTTP: the leader provisions the rows
// meanwhile).
func BenchmarkServeInProcess(b *testing.B) {
	s := apitest.Start(b, apitest.Options{Quiet: true})
	ctx := context.Background()
	const n = 1000
	// With custom authentication, as `make bench` seeds: the leader's
	// provisioning of the imported rows runs beside the requests, and a
	// wallet user's bcrypt each would be most of the process's CPU.
	tmplPayload := apitest.ValidatorPayload("template")
	custom := true
	tmplPayload.CustomAuth = &custom
	if r, err := s.Management.CreateValidatorWithResponse(ctx, tmplPayload); err != nil || r.StatusCode() != http.StatusCreated {
		b.Fatalf("create: %v", err)
	}
	tmpl, err := s.App.Store.GetValidator(ctx, "template")
	if err != nil {
		b.Fatal(err)
	}
	vs := make([]domain.Validator, n)
	for i := range vs {
		v := tmpl
		v.Name = fmt.Sprintf("node-%05d", i)
		v.Spec = bytes.ReplaceAll(tmpl.Spec, []byte(`"template"`), []byte(`"`+v.Name+`"`))
		v.ListView = bytes.ReplaceAll(tmpl.ListView, []byte(`"template-`), []byte(`"`+v.Name+`-`))
		vs[i] = v
	}
	if err := s.App.Store.ImportValidators(ctx, vs); err != nil {
		b.Fatal(err)
	}
	auth := "Bearer " + s.Token
	for _, c := range []struct {
		name, route string
		path        func(r *rand.Rand) string
		status      int
	}{
		{"list", "/api/validators", func(r *rand.Rand) string { return fmt.Sprintf("/api/validators?limit=50&from=%d", r.IntN(n-49)) }, http.StatusOK},
		{"cheap-read", "/api/remote-participants", func(*rand.Rand) string { return "/api/remote-participants" }, http.StatusOK},
	} {
		serve := func(b *testing.B, h http.Handler) {
			r := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, c.path(r), nil)
				req.Header.Set("Authorization", auth)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != c.status {
					b.Fatalf("got %d %s, want %d", w.Code, w.Body, c.status)
				}
			}
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, c.path(rand.New(rand.NewPCG(1, 2))), nil)
		req.Header.Set("Authorization", auth)
		s.App.Server.ServeHTTP(rec, req)
		body, ctype := rec.Body.Bytes(), rec.Header().Get("Content-Type")
		e := echo.New()
		e.GET(c.route, func(ec echo.Context) error {
			if ec.Request().Header.Get("Authorization") != auth {
				return ec.NoContent(http.StatusUnauthorized)
			}
			return ec.Blob(c.status, ctype, body)
		})
		b.Run(c.name+"/server", func(b *testing.B) { serve(b, s.App.Server) })
		b.Run(c.name+"/echo", func(b *testing.B) { serve(b, e) })
	}
}
