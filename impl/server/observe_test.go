package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/server"
	"github.com/validator-manager/validator-manager/impl/telemetry"
)

// TestAudit: every authenticated call of a mutating 2.0 operation is
// recorded in the database and logged, whatever its answer, with who, what,
// outcome and request id, and nothing of its body or query.
func TestAudit(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	ctx := context.Background()
	const secret = "s3cret-never-recorded"

	type call struct {
		method, path, contentType, body string
		token                           bool
	}
	calls := []struct {
		call    call
		audited bool
		want    domain.AuditEntry // At, Status and RequestID from the answer
	}{
		{call{"POST", "/api/v1/validators/acme/parties?partyIdHint=" + secret, "", "", true}, true,
			domain.AuditEntry{Subject: auth.DevSubject, Operation: "allocateParty", Validator: "acme"}},
		{call{"DELETE", "/api/v1/validators/acme/wallet-users/bob%20smith", "", "", true}, true,
			domain.AuditEntry{Subject: auth.DevSubject, Operation: "offboardWalletUser", Validator: "acme", Targets: map[string]string{"username": "bob smith"}}},
		{call{"POST", "/api/v1/validators/acme/wallet-users", "application/json", `{"name":"` + secret + `"}`, true}, true,
			domain.AuditEntry{Subject: auth.DevSubject, Operation: "onboardWalletUser", Validator: "acme"}},
		// Refused by validation (partyIdHint missing): recorded with its 400.
		{call{"POST", "/api/v1/validators/acme/parties", "", "", true}, true,
			domain.AuditEntry{Subject: auth.DevSubject, Operation: "allocateParty", Validator: "acme"}},
		// Reads and unauthenticated calls are not audited.
		{call{"GET", "/api/v1/validators", "", "", true}, false, domain.AuditEntry{}},
		{call{"POST", "/api/v1/validators/acme/parties?partyIdHint=x", "", "", false}, false, domain.AuditEntry{}},
	}
	var want []domain.AuditEntry
	for _, c := range calls {
		resp, _ := do(t, s, c.call.method, c.call.path, c.call.contentType, strings.NewReader(c.call.body), c.call.token)
		if !c.audited {
			continue
		}
		e := c.want
		e.Status = resp.StatusCode
		e.Outcome = domain.AuditDone
		e.RequestID = resp.Header.Get("X-Request-Id")
		if e.RequestID == "" {
			t.Fatalf("%s %s: no X-Request-Id", c.call.method, c.call.path)
		}
		want = append([]domain.AuditEntry{e}, want...) // newest first
	}
	if want[0].Status != http.StatusBadRequest {
		t.Fatalf("allocateParty without partyIdHint: got %d, want 400", want[0].Status)
	}
	got, err := s.App.Store.FindAudit(ctx, domain.AuditFilter{Page: domain.Page{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].At, got[i].ID = want[0].At, 0 // not compared
	}
	for i := range want {
		want[i].At = want[0].At
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("audit log:\n got %+v\nwant %+v", got, want)
	}

	var logged int
	for _, line := range strings.Split(s.Logs(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "audit" {
			continue
		}
		logged++
		for _, k := range []string{"request_id", "subject", "operation", "validator", "status"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("audit line without %s: %s", k, line)
			}
		}
	}
	if logged != len(want) {
		t.Errorf("audit log lines: got %d, want %d", logged, len(want))
	}
	if strings.Contains(s.Logs(), secret) {
		t.Errorf("a query or body value reached the log")
	}
}

// uncompletableAuditor writes the first record and fails the completion.
type uncompletableAuditor struct{ server.Auditor }

func (uncompletableAuditor) CompleteAudit(context.Context, int64, int, string) error {
	return errors.New("database is down")
}

// TestAuditCompletionFailure: a completion that cannot be stored is logged
// as an error; the answer stands (the operation has happened) and the
// record stays pending.
func TestAuditCompletionFailure(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{App: []app.Option{app.With(func(o *server.Options) { o.Audit = uncompletableAuditor{o.Audit} })}})
	resp, _ := do(t, s, "DELETE", "/api/v1/validators/acme/wallet-users/bob", "", nil, true)
	if resp.StatusCode == http.StatusInternalServerError || resp.StatusCode == http.StatusServiceUnavailable {
		t.Fatalf("got %d, want the operation's own answer", resp.StatusCode)
	}
	if !strings.Contains(s.Logs(), `"msg":"audit entry not completed; it stays pending"`) {
		t.Fatalf("no error logged for the lost completion: %s", s.Logs())
	}
	got, err := s.App.Store.FindAudit(context.Background(), domain.AuditFilter{Page: domain.Page{Limit: 10}})
	if err != nil || len(got) != 1 || got[0].Outcome != domain.AuditPending {
		t.Fatalf("audit log: got %+v %v, want one pending record", got, err)
	}
}

// TestPrometheus: /actuator/prometheus counts requests by operationId and
// status, upstream calls by upstream and outcome, reports the caches' sync
// state, and needs the token unless api.metrics.public is set.
func TestPrometheus(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	do(t, s, "GET", "/api/v1/validators", "", nil, true)
	do(t, s, "GET", "/api/v1/validators/absent", "", nil, true)
	do(t, s, "GET", "/api/v1/validators/absent", "", nil, true)
	s.App.Telemetry.ObserveUpstream("ledger", telemetry.OutcomeTimeout, 0)

	if resp, raw := do(t, s, "GET", "/actuator/prometheus", "", nil, false); resp.StatusCode != http.StatusUnauthorized || len(raw) != 0 {
		t.Fatalf("without a token: got %d %s, want 401", resp.StatusCode, raw)
	}
	resp, raw := do(t, s, "GET", "/actuator/prometheus", "", nil, true)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	body := string(raw)
	for _, want := range []string{
		`validator_manager_http_requests_total{operation="listValidators",status="200"} 1`,
		`validator_manager_http_requests_total{operation="getValidator",status="404"} 2`,
		`validator_manager_http_request_duration_seconds_count{operation="getValidator",status="404"} 2`,
		`validator_manager_upstream_request_duration_seconds_count{outcome="timeout",upstream="ledger"} 1`,
		`validator_manager_informer_synced{informer="validators"} 1`,
		`validator_manager_informer_synced{informer="applications"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}

	public := apitest.Start(t, apitest.Options{Config: func(c *config.Config) { c.MetricsPublic = true }})
	if resp, _ := do(t, public, "GET", "/actuator/prometheus", "", nil, false); resp.StatusCode != http.StatusOK {
		t.Fatalf("api.metrics.public: got %d without a token, want 200", resp.StatusCode)
	}
}
