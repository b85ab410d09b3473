package idp

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestUIURLs(t *testing.T) {
	for _, tc := range []struct {
		name        string
		uis         UIs
		wallet, ans string
	}{
		{"nothing said: none", UIs{}, "", ""},
		{"no template: the in-cluster services", UIs{Namespace: "ns"},
			"http://v1-wallet-web-ui.ns.svc.cluster.local", "http://v1-ans-web-ui.ns.svc.cluster.local"},
		{"template: host per UI", UIs{Template: "https://{ui}.{validator}.example.com", Namespace: "ns"},
			"https://wallet.v1.example.com", "https://ans.v1.example.com"},
		{"template: path per UI, trailing slash dropped", UIs{Template: "https://ui.example.com/{validator}/{ui}/"},
			"https://ui.example.com/v1/wallet", "https://ui.example.com/v1/ans"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if w, a := tc.uis.URLs("v1"); w != tc.wallet || a != tc.ans {
				t.Fatalf("got %q, %q; want %q, %q", w, a, tc.wallet, tc.ans)
			}
		})
	}
}

func TestCheckUITemplate(t *testing.T) {
	for _, tc := range []struct {
		template string
		ok       bool
	}{
		{"", true},
		{"https://{ui}.{validator}.example.com", true},
		{"http://127.0.0.1:8080/{validator}/{ui}", true},
		{"https://wallet.example.com", false}, // every validator's UI at one address
		{"ftp://{validator}.example.com", false},
		{"/{validator}/{ui}", false},
		{"https://{validator}.example.com/?x=1", false},
		{"https://{validator}.example.com/#f", false},
		{"https://user@{validator}.example.com", false},
	} {
		if err := CheckUITemplate(tc.template); (err == nil) != tc.ok {
			t.Errorf("%q: got %v, want ok %t", tc.template, err, tc.ok)
		}
	}
}

// TestRedirectAllowed: Keycloak's matching of a redirect_uri against the
// registered ones (RedirectUtils): a trailing * is a prefix of the
// redirect's part before its query, anything else the exact string.
func TestRedirectAllowed(t *testing.T) {
	wildcard := []string{"https://wallet.v1.test/*"}
	exact := []string{"https://wallet.v1.test/callback"}
	for _, tc := range []struct {
		name       string
		registered []string
		redirect   string
		ok         bool
	}{
		{"under the wildcard", wildcard, "https://wallet.v1.test/", true},
		{"deep under the wildcard", wildcard, "https://wallet.v1.test/a/b?x=1#y", true},
		{"the wildcard's base without its slash", wildcard, "https://wallet.v1.test", true},
		{"another host", wildcard, "https://wallet.v2.test/", false},
		{"a host that extends the registered one", wildcard, "https://wallet.v1.test.evil.test/", false},
		{"another scheme", wildcard, "http://wallet.v1.test/", false},
		{"the prefix only in the query", wildcard, "https://evil.test/?r=https://wallet.v1.test/", false},
		{"path traversal", wildcard, "https://wallet.v1.test/../x", false},
		{"relative", wildcard, "/callback", false},
		{"none", wildcard, "", false},
		{"exact", exact, "https://wallet.v1.test/callback", true},
		{"exact with a query added", exact, "https://wallet.v1.test/callback?x=1", false},
		{"exact with a slash added", exact, "https://wallet.v1.test/callback/", false},
		{"nothing registered", nil, "https://wallet.v1.test/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redirectAllowed(tc.registered, tc.redirect); got != tc.ok {
				t.Fatalf("got %t, want %t", got, tc.ok)
			}
		})
	}
}

var testUIs = UIs{Template: "https://{ui}.{validator}.ui.test"}

// TestKeycloakUIClients: the create requests of both UI clients carry
// their UI's redirect URIs and web origins in Keycloak's representation
// (redirectUris, webOrigins), the confidential client none; clients made
// before (without them, or with others) get them by an update at the next
// provisioning, and the same addresses ask for no update.
func TestKeycloakUIClients(t *testing.T) {
	ctx := context.Background()
	f := newFakeKeycloak(t)
	cfg := f.config()
	cfg.UIs = testUIs
	k, err := NewKeycloak(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.ProvisionClients(ctx, "v1", "claim-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.WalletURL != "https://wallet.v1.ui.test" || got.NameServiceURL != "https://ans.v1.ui.test" {
		t.Fatalf("recorded UI addresses: got %q, %q", got.WalletURL, got.NameServiceURL)
	}
	want := map[string][2][]string{
		"v1-validator-app": {{}, {}},
		"v1-wallet-ui":     {{"https://wallet.v1.ui.test/*"}, {"https://wallet.v1.ui.test"}},
		"v1-ans-ui":        {{"https://ans.v1.ui.test/*"}, {"https://ans.v1.ui.test"}},
	}
	creates := f.callsTo("POST", "/clients")
	if len(creates) != 3 {
		t.Fatalf("client creates: got %d, want 3", len(creates))
	}
	for _, c := range creates {
		// The wire format: raw JSON, as Keycloak reads it.
		var rep struct {
			ClientID                  string    `json:"clientId"`
			PublicClient              bool      `json:"publicClient"`
			StandardFlowEnabled       bool      `json:"standardFlowEnabled"`
			DirectAccessGrantsEnabled bool      `json:"directAccessGrantsEnabled"`
			RedirectURIs              *[]string `json:"redirectUris"`
			WebOrigins                *[]string `json:"webOrigins"`
		}
		if err := json.Unmarshal([]byte(c.Body), &rep); err != nil {
			t.Fatal(err)
		}
		w, ok := want[rep.ClientID]
		if !ok {
			t.Fatalf("unexpected client %q", rep.ClientID)
		}
		if rep.RedirectURIs == nil || rep.WebOrigins == nil || !slices.Equal(*rep.RedirectURIs, w[0]) || !slices.Equal(*rep.WebOrigins, w[1]) {
			t.Errorf("%s: redirectUris %v, webOrigins %v; want %v, %v", rep.ClientID, rep.RedirectURIs, rep.WebOrigins, w[0], w[1])
		}
		public := rep.ClientID != "v1-validator-app"
		if rep.PublicClient != public || rep.StandardFlowEnabled != public || rep.DirectAccessGrantsEnabled != (rep.ClientID == "v1-wallet-ui") {
			t.Errorf("%s: public %t, standard flow %t, password grant %t", rep.ClientID, rep.PublicClient, rep.StandardFlowEnabled, rep.DirectAccessGrantsEnabled)
		}
	}
	if n := len(f.callsTo("PUT", "")); n != 0 {
		t.Fatalf("updates after a create: got %d, want 0", n)
	}
	if _, err := k.ProvisionClients(ctx, "v1", "claim-1"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.callsTo("PUT", "")); n != 0 {
		t.Fatalf("updates with the same addresses: got %d, want 0", n)
	}

	// Clients made without UI addresses (before the server gave any) get
	// them, and keep their claim, mappers and secret.
	old, err := NewKeycloak(f.config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ProvisionClients(ctx, "v2", "claim-2"); err != nil {
		t.Fatal(err)
	}
	secret := f.clientByClientID("v2-validator-app").secret
	if r := f.clientByClientID("v2-wallet-ui").rep.RedirectURIs; r == nil || len(*r) != 0 {
		t.Fatalf("a client made without UI addresses: redirectUris %v, want []", r)
	}
	if _, err := k.ProvisionClients(ctx, "v2", "claim-2"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.callsTo("PUT", "")); n != 2 {
		t.Fatalf("updates of the two UI clients: got %d, want 2", n)
	}
	for _, ui := range []string{"wallet", "ans"} {
		c := f.clientByClientID("v2-" + ui + "-ui")
		if c.rep.RedirectURIs == nil || !slices.Equal(*c.rep.RedirectURIs, []string{"https://" + ui + ".v2.ui.test/*"}) ||
			c.rep.WebOrigins == nil || !slices.Equal(*c.rep.WebOrigins, []string{"https://" + ui + ".v2.ui.test"}) {
			t.Errorf("v2-%s-ui after the update: redirectUris %v, webOrigins %v", ui, c.rep.RedirectURIs, c.rep.WebOrigins)
		}
		if c.rep.Attributes[ClaimAttribute] != "claim-2" || !hasAudienceMapperRep(c.rep, "v2-ledger-api") {
			t.Errorf("v2-%s-ui lost its claim or its audience mapper: %+v", ui, c.rep)
		}
	}
	if f.clientByClientID("v2-validator-app").secret != secret {
		t.Fatal("the confidential client's secret changed")
	}
}

func hasAudienceMapperRep(c clientRep, audience string) bool {
	return slices.ContainsFunc(c.ProtocolMappers, func(m protocolMapperRep) bool {
		return m.ProtocolMapper == audienceMapperType && m.Config["included.custom.audience"] == audience
	})
}

// TestLocalUIClients: the local provider keeps the UI clients' redirect
// URIs and web origins (in the users file, across a reopen), updates those
// of clients made before, and CheckRedirect answers as Keycloak's
// authorization endpoint decides.
func TestLocalUIClients(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idp")
	before := openLocal(t, dir)
	if _, err := before.ProvisionClients(ctx, "v1", "claim-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := before.CheckRedirect(ctx, "v1-wallet-ui", "https://wallet.v1.ui.test/"); err == nil {
		t.Fatal("a client made without UI addresses allowed a redirect")
	}
	l, err := OpenLocal(dir, LocalOptions{UIs: testUIs})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.ProvisionClients(ctx, "v1", "claim-1")
	if err != nil || got.WalletURL != "https://wallet.v1.ui.test" || got.NameServiceURL != "https://ans.v1.ui.test" {
		t.Fatalf("got %+v, %v", got, err)
	}
	reopened, err := OpenLocal(dir, LocalOptions{UIs: testUIs})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		client, redirect, err string
		audience              string
	}{
		{"v1-wallet-ui", "https://wallet.v1.ui.test/", "", "v1-ledger-api"},
		{"v1-ans-ui", "https://ans.v1.ui.test/callback?x=1", "", "v1-ledger-api"},
		{"v1-wallet-ui", "https://ans.v1.ui.test/", "Invalid parameter: redirect_uri", ""},
		{"v1-wallet-ui", "https://evil.test/", "Invalid parameter: redirect_uri", ""},
		{"v2-wallet-ui", "https://wallet.v2.ui.test/", "Client not found.", ""},
		{"v1-validator-app", "https://wallet.v1.ui.test/", "Wrong client protocol.", ""},
	} {
		aud, err := reopened.CheckRedirect(ctx, tc.client, tc.redirect)
		var de *domain.Error
		switch {
		case tc.err == "" && (err != nil || aud != tc.audience):
			t.Errorf("%s %s: got %q, %v; want %q", tc.client, tc.redirect, aud, err, tc.audience)
		case tc.err != "" && (!errors.As(err, &de) || de.Message != tc.err):
			t.Errorf("%s %s: got %v, want %q", tc.client, tc.redirect, err, tc.err)
		}
	}
	if _, err := OpenLocal(t.TempDir(), LocalOptions{UIs: UIs{Template: "https://wallet.example.com"}}); err == nil {
		t.Fatal("a template without {validator} was accepted")
	}
}
