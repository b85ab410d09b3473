package platform

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// TestRelay: a 2xx answer is decoded into the response type; a failed call,
// an error status and a body that does not decode are upstream errors that
// name the upstream the call went to.
func TestRelay(t *testing.T) {
	t.Parallel()
	n := &upstream.Node{Target: upstream.Target{LedgerURL: "http://127.0.0.1:1", ScanURL: "http://127.0.0.2:1", ValidatorAppURL: "http://127.0.0.3:1"}}
	answer := func(status int, body string) func() (*http.Response, []byte) {
		u, _ := url.Parse("http://127.0.0.1:1/v2/users")
		return func() (*http.Response, []byte) {
			return &http.Response{StatusCode: status, Request: &http.Request{URL: u}}, []byte(body)
		}
	}
	type user struct {
		ID string `json:"id"`
	}
	got, err := relay[user](n, upstream.Ledger, nil, answer(200, `{"id":"alice"}`))
	if err != nil || got.ID != "alice" {
		t.Errorf("200: got %+v %v, want alice", got, err)
	}
	for _, c := range []struct {
		name, up string
		err      error
		res      func() (*http.Response, []byte)
		want     string
	}{
		{"no answer", upstream.Scan, errors.New("connection refused"), nil, "scan service"},
		{"error status", upstream.ValidatorApp, nil, answer(500, `{}`), "validator app"},
		{"body off its description", upstream.Ledger, nil, answer(200, `{"id":7}`), "the ledger API answered with a body that does not match its description"},
	} {
		_, err := relay[user](n, c.up, c.err, c.res)
		var ue *domain.UpstreamError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an upstream error naming %q", c.name, err, c.want)
		}
	}
}
