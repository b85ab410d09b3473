package idp

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// clientProvider is what both providers offer for a validator's clients.
type clientProvider interface {
	ProvisionClients(ctx context.Context, validator, claim string) (domain.ProvisionedAuth, error)
	ClientSecret(ctx context.Context, validator, claim string) (string, error)
	DeleteClients(ctx context.Context, validator, claim string) error
	Endpoints() domain.AuthEndpoints
}

// providers are both identity providers, each with a way to tell whether
// a client exists.
func providers(t *testing.T) map[string]struct {
	p      clientProvider
	exists func(clientID string) bool
} {
	f := newFakeKeycloak(t)
	l := openLocal(t, filepath.Join(t.TempDir(), "idp"))
	return map[string]struct {
		p      clientProvider
		exists func(clientID string) bool
	}{
		"keycloak": {f.adapter(t), func(id string) bool { return f.clientByClientID(id) != nil }},
		"local": {l, func(id string) bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, c := range l.clients {
				if c.ClientID == id {
					return true
				}
			}
			return false
		}},
	}
}

func TestProvisionClients(t *testing.T) {
	ctx := context.Background()
	for name, tp := range providers(t) {
		t.Run(name, func(t *testing.T) {
			p := tp.p
			first, err := p.ProvisionClients(ctx, "v1", "claim-1")
			if err != nil {
				t.Fatal(err)
			}
			want := domain.ProvisionedAuth{Audience: "v1-ledger-api", LedgerAPIClient: "v1-validator-app", LedgerAPIUser: first.LedgerAPIUser,
				WalletClient: "v1-wallet-ui", NameServiceClient: "v1-ans-ui"}
			if first != want || !first.Complete() {
				t.Fatalf("got %+v, want %+v with a service-account user", first, want)
			}
			// Idempotent: the same call (a retry after a crash) adopts them.
			again, err := p.ProvisionClients(ctx, "v1", "claim-1")
			if err != nil || again != first {
				t.Fatalf("again: got %+v, %v; want %+v", again, err, first)
			}
			// Another create's claim is refused and changes nothing.
			if _, err := p.ProvisionClients(ctx, "v1", "claim-2"); !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("other claim: got %v, want conflict", err)
			}
			secret, err := p.ClientSecret(ctx, "v1", "claim-1")
			if err != nil || len(secret) < 20 {
				t.Fatalf("client secret: got %d characters, %v", len(secret), err)
			}
			if again, _ := p.ClientSecret(ctx, "v1", "claim-1"); again != secret {
				t.Fatal("the client secret changed between reads")
			}
			if _, err := p.ClientSecret(ctx, "v1", "claim-2"); !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("secret for another claim: got %v, want conflict", err)
			}
			// Delete is guarded by the claim.
			if err := p.DeleteClients(ctx, "v1", "claim-2"); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"v1-validator-app", "v1-wallet-ui", "v1-ans-ui"} {
				if !tp.exists(id) {
					t.Fatalf("%s deleted under another claim", id)
				}
			}
			if err := p.DeleteClients(ctx, "v1", "claim-1"); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"v1-validator-app", "v1-wallet-ui", "v1-ans-ui"} {
				if tp.exists(id) {
					t.Fatalf("%s kept after its delete", id)
				}
			}
			if err := p.DeleteClients(ctx, "v1", "claim-1"); err != nil {
				t.Fatalf("delete of absent clients: %v", err)
			}
			if _, err := p.ClientSecret(ctx, "v1", "claim-1"); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("secret of a deleted client: got %v, want not found", err)
			}
			if _, err := p.ProvisionClients(ctx, "", "claim-1"); !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("no name: got %v, want invalid", err)
			}
		})
	}
}

// TestKeycloakClientsWireFormat: the create requests are Keycloak's client
// representation (confidential with only the service account, public with
// the browser flow, the password grant only on the wallet UI), each with
// the claim attribute and the audience mapper.
func TestKeycloakClientsWireFormat(t *testing.T) {
	f := newFakeKeycloak(t)
	k := f.adapter(t)
	if _, err := k.ProvisionClients(context.Background(), "v1", "claim-1"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		clientID                                   string
		public, serviceAccount, standard, password bool
	}{
		{"v1-validator-app", false, true, false, false},
		{"v1-wallet-ui", true, false, true, true},
		{"v1-ans-ui", true, false, true, false},
	}
	creates := f.callsTo("POST", "/admin/realms/wallets/clients")
	if len(creates) != len(tests) {
		t.Fatalf("got %d client creates, want %d", len(creates), len(tests))
	}
	for i, tt := range tests {
		var rep clientRep
		if err := json.Unmarshal([]byte(creates[i].Body), &rep); err != nil {
			t.Fatal(err)
		}
		flag := func(b *bool) bool { return b != nil && *b }
		if rep.ClientID != tt.clientID || flag(rep.PublicClient) != tt.public || flag(rep.ServiceAccountsEnabled) != tt.serviceAccount ||
			flag(rep.StandardFlowEnabled) != tt.standard || flag(rep.DirectAccessGrantsEnabled) != tt.password || rep.Protocol != "openid-connect" {
			t.Errorf("create %d: got %+v, want %+v", i, rep, tt)
		}
		if rep.Attributes[ClaimAttribute] != "claim-1" {
			t.Errorf("%s: attributes %v, want the claim", tt.clientID, rep.Attributes)
		}
		if len(rep.ProtocolMappers) != 1 || rep.ProtocolMappers[0].ProtocolMapper != "oidc-audience-mapper" ||
			rep.ProtocolMappers[0].Config["included.custom.audience"] != "v1-ledger-api" || rep.ProtocolMappers[0].Config["access.token.claim"] != "true" {
			t.Errorf("%s: protocol mappers %+v, want the audience mapper", tt.clientID, rep.ProtocolMappers)
		}
	}
	sa := f.callsTo("GET", "/service-account-user")
	if len(sa) != 1 {
		t.Fatalf("service-account-user reads: got %d, want 1", len(sa))
	}
	if got := k.Endpoints(); got.JWKS != f.srv.URL+"/realms/wallets/protocol/openid-connect/certs" ||
		got.Authority != f.srv.URL+"/realms/wallets" || got.Config != f.srv.URL+"/realms/wallets/.well-known/openid-configuration" {
		t.Errorf("endpoints: got %+v", got)
	}
}

// TestKeycloakAdoptsAfterACrash: a client left by a call that died (made,
// not recorded; or made by hand with the claim but without the mapper) is
// adopted, its mapper added; no duplicate is created.
func TestKeycloakAdoptsAfterACrash(t *testing.T) {
	f := newFakeKeycloak(t)
	k := f.adapter(t)
	ctx := context.Background()
	if _, err := k.ProvisionClients(ctx, "v1", "claim-1"); err != nil {
		t.Fatal(err)
	}
	c := f.clientByClientID("v1-wallet-ui")
	f.mu.Lock()
	c.rep.ProtocolMappers = nil
	f.mu.Unlock()
	f.noLocation = true // a proxy that drops Location: the adapter looks the client up
	if err := k.DeleteClients(ctx, "v1", ""); err != nil {
		t.Fatal(err)
	}
	got, err := k.ProvisionClients(ctx, "v1", "claim-1")
	if err != nil || !got.Complete() {
		t.Fatalf("got %+v, %v", got, err)
	}
	if n := len(f.callsTo("POST", "/clients")); n != 3 {
		t.Fatalf("client creates: got %d, want the first call's 3 only", n)
	}
	if n := len(f.callsTo("POST", "/protocol-mappers/models")); n != 1 {
		t.Fatalf("mapper creates: got %d, want 1 (the one removed)", n)
	}
	if err := k.DeleteClients(ctx, "v1", "claim-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.ProvisionClients(ctx, "v1", "claim-2"); err != nil {
		t.Fatalf("provision after delete, without Location headers: %v", err)
	}
	if f.userCount() != 1 {
		t.Fatalf("users: got %d, want the one new service account (the old one went with its client)", f.userCount())
	}
}

// TestLocalClientsPersistAndIssue: the local provider keeps its clients
// across a restart, and authenticates the confidential one.
func TestLocalClientsPersistAndIssue(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idp")
	l := openLocal(t, dir)
	a, err := l.ProvisionClients(ctx, "v1", "claim-1")
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := l.ClientSecret(ctx, "v1", "claim-1")
	reopened := openLocal(t, dir)
	if again, err := reopened.ProvisionClients(ctx, "v1", "claim-1"); err != nil || again != a {
		t.Fatalf("after a restart: got %+v, %v; want %+v", again, err, a)
	}
	sub, aud, err := reopened.CheckClient(ctx, "v1-validator-app", secret)
	if err != nil || sub != a.LedgerAPIUser || aud != a.Audience {
		t.Fatalf("check client: got %q %q %v; want %q %q", sub, aud, err, a.LedgerAPIUser, a.Audience)
	}
	for _, tc := range []struct{ id, secret string }{{"v1-validator-app", "wrong"}, {"v1-wallet-ui", ""}, {"unknown", secret}} {
		var de *domain.Error
		if _, _, err := reopened.CheckClient(ctx, tc.id, tc.secret); !errors.As(err, &de) || de.Code != domain.CodeUnauthenticated {
			t.Errorf("check %s: got %v, want unauthenticated", tc.id, err)
		}
	}
	if (domain.AuthEndpoints{}) != reopened.Endpoints() {
		t.Fatal("endpoints before SetEndpoints")
	}
	reopened.SetEndpoints(RealmEndpoints("http://127.0.0.1:1", "sandbox"))
	if got := reopened.Endpoints().Token; got != "http://127.0.0.1:1/realms/sandbox/protocol/openid-connect/token" {
		t.Fatalf("token URL: got %s", got)
	}
}
