package platform_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/validator-manager/validator-manager/gen/upstream/validatorapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/platform"
	"github.com/validator-manager/validator-manager/impl/server"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// oneNode hands out the same nodes for every validator.
type oneNode struct{ n *upstream.Node }

func (o oneNode) For(context.Context, string) (*upstream.Node, error) { return o.n, nil }

// TestIdentityDumpCutIsNotWhole: the dump is a private key export streamed
// as it arrives; when the validator app's stream breaks after the header
// was sent, the client must see a cut response, not a shorter file that
// ends as if it were whole.
func TestIdentityDumpCutIsNotWhole(t *testing.T) {
	t.Parallel()
	app1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK) // chunked: no Content-Length
		_, _ = io.WriteString(w, `{"id":"participant::1220ab","keys":[{"keyPair":"`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-answer
	}))
	t.Cleanup(app1.Close)
	va, err := validatorapi.NewClientWithResponses(app1.URL + "/api/validator")
	if err != nil {
		t.Fatal(err)
	}
	node := &upstream.Node{Target: upstream.Target{Validator: validator, ValidatorAppURL: app1.URL}, Validator: va}
	wire := app.With(func(so *server.Options) {
		so.Platform = platform.New(platform.Options{Upstreams: oneNode{node}, Logger: so.Logger, Docs: so.Docs})
	})
	s := apitest.Start(t, apitest.Options{App: []app.Option{wire}})

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/api/v1/validators/"+validator+"/identity-dump", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return // cut before the header: the client sees the failure
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode == http.StatusOK {
		t.Fatalf("a cut dump ended as a whole 200 answer of %d bytes: %q", len(b), b)
	}
}
