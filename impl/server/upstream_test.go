package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/platform"
	"github.com/validator-manager/validator-manager/impl/server"
)

// failingUpstream answers allocateParty with the error of a test case.
type failingUpstream struct {
	*platform.Server
	err error
}

func (f failingUpstream) AllocateParty(context.Context, platformapi.AllocatePartyRequestObject) (platformapi.AllocatePartyResponseObject, error) {
	return nil, f.err
}

// TestUpstreamErrors: a failed upstream call is 502, a rejection 422, both
// as {endpoint, error} with the safe message; the cause is in the log only.
func TestUpstreamErrors(t *testing.T) {
	t.Parallel()
	const secretCause = "dial tcp 127.0.0.9:7575: token=abc.def refused"
	tests := []struct {
		name   string
		err    *domain.UpstreamError
		status int
		msg    string
	}{
		{"failed", &domain.UpstreamError{Endpoint: "ledger POST /v2/parties", Message: "the ledger API did not answer", Cause: errors.New(secretCause)}, http.StatusBadGateway, "the ledger API did not answer"},
		{"rejected", &domain.UpstreamError{Endpoint: "ledger POST /v2/parties", Status: 400, Rejected: true, Message: "the ledger refused the request: INVALID_ARGUMENT", Cause: errors.New(secretCause)}, http.StatusUnprocessableEntity, "the ledger refused the request: INVALID_ARGUMENT"},
		{"no message", &domain.UpstreamError{Endpoint: "ledger POST /v2/parties", Cause: errors.New(secretCause)}, http.StatusBadGateway, "the upstream call failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := apitest.Start(t, apitest.Options{App: []app.Option{app.With(func(o *server.Options) {
				o.Platform = failingUpstream{Server: o.Platform.(*platform.Server), err: tt.err}
			})}})
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v1/validators/v1/parties?partyIdHint=alice", nil)
			req.Header.Set("Authorization", "Bearer "+s.Token)
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, raw, tt.status)
			}
			var body map[string]string
			if err := json.Unmarshal(raw, &body); err != nil || len(body) != 2 || body["endpoint"] != tt.err.Endpoint || body["error"] != tt.msg {
				t.Errorf("body: got %s, want {endpoint: %q, error: %q}", raw, tt.err.Endpoint, tt.msg)
			}
			if strings.Contains(string(raw), "127.0.0.9") || strings.Contains(string(raw), "token=") {
				t.Errorf("the cause leaked into the response: %s", raw)
			}
			if !strings.Contains(s.Logs(), secretCause) {
				t.Error("the cause is not in the log")
			}
		})
	}
}
