package platform_test

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	participantv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/participant/v30"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// BenchmarkPartiesProxyOverhead: GET /api/v1/validators/{name}/parties
// against GET /v2/parties on the sandbox ledger directly (same parties,
// one page), sequentially over loopback; it reports each side's p50 and
// their difference, the proxy's overhead.
func BenchmarkPartiesProxyOverhead(b *testing.B) {
	s := apitest.Start(b, apitest.Options{App: []app.Option{app.With(func(o *sandbox.Options) { o.Wrap = nil })}})
	createValidator(b, s)
	ctx := b.Context()
	for _, hint := range []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"} {
		if r, err := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: hint}); err != nil || r.StatusCode() != http.StatusOK {
			b.Fatalf("allocate: %v", err)
		}
	}
	tgt, err := s.App.Sandbox.Target(validator)
	if err != nil {
		b.Fatal(err)
	}
	ledgerToken, err := sandboxToken(ctx, tgt.Credentials.TokenURL, s.App.Sandbox.ClientSecret())
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	get := func(url, token string) time.Duration {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", url, resp.StatusCode)
		}
		return time.Since(start)
	}
	proxied := s.URL + "/api/v1/validators/" + validator + "/parties"
	direct := tgt.LedgerURL + "/v2/parties"
	for range 200 { // warm connections, the token cache and the resolver
		get(proxied, s.Token)
		get(direct, ledgerToken)
	}
	var viaProxy, viaLedger []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		viaProxy = append(viaProxy, get(proxied, s.Token))
		viaLedger = append(viaLedger, get(direct, ledgerToken))
	}
	b.StopTimer()
	p50 := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	pp, pl := p50(viaProxy), p50(viaLedger)
	b.ReportMetric(float64(pp.Microseconds()), "proxy-p50-µs")
	b.ReportMetric(float64(pl.Microseconds()), "ledger-p50-µs")
	b.ReportMetric(float64((pp - pl).Microseconds()), "overhead-p50-µs")
}

// BenchmarkAdminProxyOverhead: GET /api/v1/validators/{name}/participant-status
// (one admin gRPC call, ParticipantStatus) against the same call on the
// sandbox participant's admin API directly, with its token, over a kept
// gRPC connection; each side's p50 and their difference.
func BenchmarkAdminProxyOverhead(b *testing.B) {
	s := apitest.Start(b, apitest.Options{App: []app.Option{app.With(func(o *sandbox.Options) { o.Wrap = nil })}})
	createValidator(b, s)
	ctx := b.Context()
	tgt, err := s.App.Sandbox.Target(validator)
	if err != nil {
		b.Fatal(err)
	}
	token, err := sandboxToken(ctx, tgt.Credentials.TokenURL, s.App.Sandbox.ClientSecret())
	if err != nil {
		b.Fatal(err)
	}
	conn, err := grpc.NewClient("passthrough:///"+tgt.AdminAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	status := participantv30.NewParticipantStatusServiceClient(conn)
	direct := func() time.Duration {
		start := time.Now()
		if _, err := status.ParticipantStatus(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), &participantv30.ParticipantStatusRequest{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	proxied := func() time.Duration {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/validators/"+validator+"/participant-status", nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("participant-status: %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	for range 200 { // warm connections, the token cache and the resolver
		proxied()
		direct()
	}
	var viaProxy, viaAdmin []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		viaProxy = append(viaProxy, proxied())
		viaAdmin = append(viaAdmin, direct())
	}
	b.StopTimer()
	p50 := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	pp, pa := p50(viaProxy), p50(viaAdmin)
	b.ReportMetric(float64(pp.Microseconds()), "proxy-p50-µs")
	b.ReportMetric(float64(pa.Microseconds()), "admin-p50-µs")
	b.ReportMetric(float64((pp - pa).Microseconds()), "overhead-p50-µs")
}
