package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/management"
	"github.com/validator-manager/validator-manager/impl/server"
)

// seeing records the caller a handler finds in its context.
type seeing struct {
	*management.Server
	mu  sync.Mutex
	got []auth.Principal
}

func (s *seeing) ListValidators(ctx context.Context, req managementapi.ListValidatorsRequestObject) (managementapi.ListValidatorsResponseObject, error) {
	if p, ok := auth.PrincipalFrom(ctx); ok {
		s.mu.Lock()
		s.got = append(s.got, p)
		s.mu.Unlock()
	}
	return s.Server.ListValidators(ctx, req)
}

// TestPrincipalInContext: a handler of an authenticated operation finds the
// token's subject in its context.
func TestPrincipalInContext(t *testing.T) {
	t.Parallel()
	var h *seeing
	s := apitest.Start(t, apitest.Options{App: []app.Option{app.With(func(o *server.Options) {
		h = &seeing{Server: o.Management.(*management.Server)}
		o.Management = h
	})}})
	r, err := s.Management.ListValidatorsWithResponse(context.Background(), nil)
	if err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("list: %v %v", r.StatusCode(), err)
	}
	if len(h.got) != 1 || h.got[0].Subject != auth.DevSubject || h.got[0].Issuer != auth.DevIssuerName {
		t.Errorf("principal: got %+v, want subject %s of %s", h.got, auth.DevSubject, auth.DevIssuerName)
	}
}

// TestConsolePlainHandler: the WebSocket console is served by a plain
// handler on the raw connection, behind authentication and validation.
func TestConsolePlainHandler(t *testing.T) {
	t.Parallel()
	var seen []auth.Principal
	s := apitest.Start(t, apitest.Options{App: []app.Option{app.With(func(o *server.Options) {
		o.Plain["openLedgerConsole"] = func(w http.ResponseWriter, r *http.Request) error {
			p, _ := auth.PrincipalFrom(r.Context())
			seen = append(seen, p)
			w.WriteHeader(http.StatusSwitchingProtocols) // what an upgrade answers
			return nil
		}
	})}})
	tests := []struct {
		name    string
		query   string
		headers map[string]string
		status  int
		reached bool
	}{
		{"no token", "?validator=v1", map[string]string{"Upgrade": "websocket"}, http.StatusUnauthorized, false},
		{"token in the subprotocol", "?validator=v1", map[string]string{"Upgrade": "websocket", "Sec-WebSocket-Protocol": "bearer, " + s.Token}, http.StatusSwitchingProtocols, true},
		{"token in the header", "?validator=v1", map[string]string{"Upgrade": "websocket", "Authorization": "Bearer " + s.Token}, http.StatusSwitchingProtocols, true},
		{"no validator: refused by validation", "", map[string]string{"Upgrade": "websocket", "Authorization": "Bearer " + s.Token}, http.StatusBadRequest, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(seen)
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/ws/ledger-console"+tt.query, nil)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("got %d, want %d", resp.StatusCode, tt.status)
			}
			if reached := len(seen) > before; reached != tt.reached {
				t.Fatalf("plain handler reached: got %v, want %v", reached, tt.reached)
			}
			if tt.reached && seen[len(seen)-1].Subject != auth.DevSubject {
				t.Errorf("principal: got %+v, want %s", seen[len(seen)-1], auth.DevSubject)
			}
		})
	}
}
