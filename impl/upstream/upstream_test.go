package upstream_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// TestAnswer: each upstream answer maps to one outcome of the release.
func TestAnswer(t *testing.T) {
	canton := func(code string, category, grpc int) string {
		return `{"code":"` + code + `","cause":"because","context":{},"errorCategory":` + itoa(category) + `,"grpcCodeValue":` + itoa(grpc) + `}`
	}
	tests := []struct {
		name     string
		up       string
		status   int
		body     string
		want     int // 422, 404, 409 or 502
		contains string
	}{
		{"ledger invalid argument", upstream.Ledger, 400, canton("INVALID_ARGUMENT", 8, 3), 422, "INVALID_ARGUMENT: because"},
		{"ledger invalid, category only", upstream.Ledger, 400, canton("DAR_PARSE_ERROR", 8, 0), 422, "DAR_PARSE_ERROR"},
		{"ledger not found", upstream.Ledger, 404, canton("USER_NOT_FOUND", 11, 5), 404, "USER_NOT_FOUND"},
		{"ledger already exists", upstream.Ledger, 409, canton("USER_ALREADY_EXISTS", 10, 6), 409, "USER_ALREADY_EXISTS"},
		{"ledger unavailable", upstream.Ledger, 503, canton("SERVICE_NOT_RUNNING", 1, 14), 502, "SERVICE_NOT_RUNNING"},
		{"ledger 401", upstream.Ledger, 401, `not json`, 502, "refused the server's credentials"},
		{"ledger text 400", upstream.Ledger, 400, `Invalid value for: body`, 502, "answered 400"},
		{"app 404", upstream.ValidatorApp, 404, `{"error":"no such user"}`, 404, "no such user"},
		{"app 400", upstream.ValidatorApp, 400, `{"error":"bad name"}`, 422, "bad name"},
		{"app 409", upstream.ValidatorApp, 409, `{"error":"taken"}`, 409, "taken"},
		{"scan 500", upstream.Scan, 500, `{"error":"boom"}`, 502, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := upstream.Call{Upstream: tt.up, URL: "http://node.test:7575/v2/users?pageToken=secret"}.Answer(tt.status, []byte(tt.body))
			got, msg, endpoint := outcome(err)
			if got != tt.want || !strings.Contains(msg, tt.contains) {
				t.Fatalf("got %d %q, want %d containing %q", got, msg, tt.want, tt.contains)
			}
			if endpoint != "" && endpoint != "http://node.test:7575/v2/users" {
				t.Fatalf("endpoint: got %q, want the address without the query", endpoint)
			}
		})
	}
}

func outcome(err error) (int, string, string) {
	var de *domain.Error
	if errors.As(err, &de) {
		switch de.Code {
		case domain.CodeNotFound:
			return 404, de.Message, ""
		case domain.CodeConflict:
			return 409, de.Message, ""
		}
	}
	var ue *domain.UpstreamError
	if errors.As(err, &ue) {
		if ue.Rejected {
			return 422, ue.Message, ue.Endpoint
		}
		return 502, ue.Message, ue.Endpoint
	}
	return 0, "", ""
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestTimeoutAndTokens: a call is bounded by the timeout, and the token of
// a grant is fetched once and sent with every call.
func TestTimeoutAndTokens(t *testing.T) {
	tokens := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		tokens++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`))
	})
	mux.HandleFunc("GET /v2/packages", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("slow") != "" {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"packageIds":["p1"]}`))
	})
	// The generated client sends no query here; a second server is the slow one.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			mux.ServeHTTP(w, r)
			return
		}
		<-r.Context().Done()
	}))
	defer slow.Close()
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res := resolverFunc(func(_ context.Context, name string) (upstream.Target, error) {
		base := srv.URL
		if name == "slow" {
			base = slow.URL
		}
		return upstream.Target{Validator: name, LedgerURL: base, Credentials: &upstream.Credentials{TokenURL: srv.URL + "/token", ClientID: "c", ClientSecret: "s"}}, nil
	})
	c := upstream.New(upstream.Options{Resolver: res, Timeout: 200 * time.Millisecond})
	for range 3 {
		n, err := c.For(t.Context(), "fast")
		if err != nil {
			t.Fatal(err)
		}
		r, err := n.Ledger.GetV2PackagesWithResponse(t.Context())
		if err != nil || r.JSON200 == nil {
			t.Fatalf("packages: %v", err)
		}
	}
	if tokens != 1 {
		t.Fatalf("token requests: got %d, want 1", tokens)
	}
	n, _ := c.For(t.Context(), "slow")
	start := time.Now()
	_, err := n.Ledger.GetV2PackagesWithResponse(t.Context())
	if err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("slow call: got %v after %v, want a timeout after 200ms", err, time.Since(start))
	}
	got, msg, _ := outcome(upstream.Call{Upstream: upstream.Ledger, URL: slow.URL}.Failed(err))
	if got != 502 || !strings.Contains(msg, "did not answer in time") {
		t.Fatalf("got %d %q, want 502 saying the ledger did not answer in time", got, msg)
	}
}

type resolverFunc func(ctx context.Context, name string) (upstream.Target, error)

func (f resolverFunc) Resolve(ctx context.Context, name string) (upstream.Target, error) {
	return f(ctx, name)
}

type fakeRecords map[string]domain.Validator

func (f fakeRecords) GetValidator(_ context.Context, name string) (domain.Validator, error) {
	v, ok := f[name]
	if !ok {
		return v, domain.NotFound("validator %q not found", name)
	}
	return v, nil
}

type fakeSecrets map[string]string

func (f fakeSecrets) LedgerAPIClientSecret(_ context.Context, name string) (string, error) {
	s, ok := f[name]
	if !ok {
		return "", domain.NotFound("no secret")
	}
	return s, nil
}

// TestClusterResolver: addresses by the Helm convention, scan from the
// configuration, credentials from the Secret.
func TestClusterResolver(t *testing.T) {
	spec := func(auth string) []byte {
		return []byte(`{"version":1,"name":"v","clusterConfig":{"scanAddress":"https://scan.test/api/scan/","migration":{"id":3}}` + auth + `}`)
	}
	recs := fakeRecords{
		"plain":  {Name: "plain", MigrationID: 3, Spec: spec("")},
		"custom": {Name: "custom", Spec: spec(`,"auth":{"ledgerApiClientId":"ledger-client","audience":"https://ledger.test","oidcAuthorityUrl":"https://kc.test/realms/r"}`)},
		"nokey":  {Name: "nokey", Spec: spec("")},
	}
	r := upstream.ClusterResolver{Records: recs, Secrets: fakeSecrets{"custom": "s3cret", "nokey": "s"}, Namespace: "ns", TokenURL: ""}
	tgt, err := r.Resolve(t.Context(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	if tgt.LedgerURL != "http://plain-participant.ns.svc.cluster.local:7575" || tgt.ValidatorAppURL != "http://plain-validator-app.ns.svc.cluster.local:5003" ||
		tgt.ScanURL != "https://scan.test" || tgt.Credentials != nil || tgt.MigrationID != 3 {
		t.Fatalf("plain: got %+v", tgt)
	}
	tgt, err = r.Resolve(t.Context(), "custom")
	if err != nil {
		t.Fatal(err)
	}
	if c := tgt.Credentials; c == nil || c.ClientID != "ledger-client" || c.ClientSecret != "s3cret" || c.Audience != "https://ledger.test" ||
		c.TokenURL != "https://kc.test/realms/r/protocol/openid-connect/token" {
		t.Fatalf("custom credentials: got %+v", tgt.Credentials)
	}
	if _, err := r.Resolve(t.Context(), "nokey"); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("secret without client id: got %v, want unavailable", err)
	}
	if _, err := r.Resolve(t.Context(), "absent"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("absent: got %v, want not found", err)
	}
	// Chart mode: Splice's charts name the Services after their release,
	// in the validator's release namespace.
	r.Release = func(name string) string { return "rel-" + name }
	tgt, err = r.Resolve(t.Context(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	if tgt.LedgerURL != "http://participant.rel-plain.svc.cluster.local:7575" || tgt.ValidatorAppURL != "http://validator-app.rel-plain.svc.cluster.local:5003" ||
		tgt.AdminAddress != "participant.rel-plain.svc.cluster.local:5002" {
		t.Fatalf("chart mode: got %+v", tgt)
	}
}
