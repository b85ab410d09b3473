package upstream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/outbound"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// TestPolicyKeepsCredentials: a token endpoint or upstream the outbound
// address policy refuses is never called (no client secret, no token, no
// request leaves), and the call fails 502 naming the policy; allowed
// addresses are called as before.
func TestPolicyKeepsCredentials(t *testing.T) {
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`))
	})
	mux.HandleFunc("GET /v2/packages", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"packageIds":["p1"]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The test server listens on loopback, which the policy refuses unless
	// it is listed as an IP.
	refusing := &outbound.Policy{AnyHost: true}
	allowing := &outbound.Policy{Hosts: []string{"127.0.0.1"}}
	tests := []struct {
		name      string
		policy    *outbound.Policy
		ledger    string
		token     string
		wantHits  int32
		wantError string
	}{
		{"token endpoint refused", allowing, srv.URL, "https://169.254.169.254/token", 0, "outbound address policy"},
		{"everything refused", refusing, srv.URL, srv.URL + "/token", 0, "outbound address policy"},
		{"allowed", allowing, srv.URL, srv.URL + "/token", 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			res := resolverFunc(func(_ context.Context, name string) (upstream.Target, error) {
				return upstream.Target{Validator: name, LedgerURL: tt.ledger, Credentials: &upstream.Credentials{TokenURL: tt.token, ClientID: "c", ClientSecret: "secret"}}, nil
			})
			c := upstream.New(upstream.Options{Resolver: res, Timeout: 2 * time.Second, Transport: tt.policy.Transport()})
			n, err := c.For(t.Context(), "v1")
			if err != nil {
				t.Fatal(err)
			}
			r, err := n.Ledger.GetV2PackagesWithResponse(t.Context())
			if got := hits.Load(); got != tt.wantHits {
				t.Fatalf("requests that reached the server: got %d, want %d", got, tt.wantHits)
			}
			if tt.wantError == "" {
				if err != nil || r.JSON200 == nil {
					t.Fatalf("allowed call: %v", err)
				}
				return
			}
			status, msg, _ := outcome(upstream.Check(upstream.Ledger, nil, nil, err, tt.ledger))
			if status != http.StatusBadGateway || !strings.Contains(msg, tt.wantError) {
				t.Fatalf("got %d %q, want 502 naming the policy", status, msg)
			}
		})
	}
}
