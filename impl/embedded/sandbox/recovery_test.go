package sandbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
	"github.com/validator-manager/validator-manager/impl/idp"
)

// realmClients is the local identity provider's one confidential client.
type realmClients struct{}

func (realmClients) CheckClient(_ context.Context, id, secret string) (string, string, error) {
	if id != "v1-validator-app" || secret != "app-secret" {
		return "", "", errors.New("invalid client credentials")
	}
	return "sa-v1", "v1-ledger-api", nil
}

// passwords are the local identity provider's users and passwords; a
// user's id is "id-" and its name.
type passwords map[string]string

func (p passwords) CheckPassword(_ context.Context, username, password string) (string, error) {
	if want, ok := p[username]; !ok || want != password {
		return "", &domain.Error{Code: domain.CodeUnauthenticated, Message: "invalid user credentials"}
	}
	return "id-" + username, nil
}

// provisioned knows v1 and v2 with the clients the local identity provider
// made for them (no custom auth): v1's operator wallet user is
// v1_walletuser's id, its ledger API user the client's service account.
type provisioned struct{}

func (provisioned) GetValidator(_ context.Context, name string) (domain.Validator, error) {
	if name != "v1" && name != "v2" {
		return domain.Validator{}, domain.NotFound("validator %q not found", name)
	}
	auth := `{"auth":{"ledgerApiClientId":"` + name + `-validator-app","ledgerApiUser":"sa-` + name + `","walletUser":"id-` + name + `_walletuser","audience":"` + name + `-ledger-api"}}`
	return domain.Validator{Name: name, MigrationID: 4, Spec: []byte(auth)}, nil
}

func decodeJSON(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

// TestRecoveryEndpoints: what the recover command meets on the embedded
// default. The network publishes its address while it runs; the discovery
// route starts a known validator's nodes; the realm's password grant
// checks the wallet user's password; the validator app answers livez and
// the data snapshot as Splice describes them (the contract hook checks
// each answer against openapi/upstream/validator-app.yaml).
func TestRecoveryEndpoints(t *testing.T) {
	dir := t.TempDir()
	hook, err := apitest.ContractHook(func(p string) { t.Error(p) })
	if err != nil {
		t.Fatal(err)
	}
	n, err := sandbox.Open(dir, sandbox.Options{Wrap: hook, Passwords: passwords{"v1_walletuser": "pw-1", "v2_walletuser": "pw-2"}, Clients: realmClients{},
		Secrets: secrets{"v1": "app-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, n)
	if fi, err := os.Stat(filepath.Join(dir, "network.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("network.json: %v, %v; want a file of mode 0600", fi, err)
	}
	ctx := t.Context()
	if _, err := sandbox.Discover(ctx, dir, "v1"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("discovery before ServeDiscovery: got %v, want a 503", err)
	}
	resolver := n.Resolver(provisioned{})
	n.ServeDiscovery(resolver)
	ep, err := sandbox.Discover(ctx, dir, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if ep.Realm != sandbox.Realm || ep.MigrationID != 4 || !strings.HasPrefix(ep.ValidatorAppURL, "http://127.0.0.1:") || !strings.HasPrefix(ep.AuthURL, "http://127.0.0.1:") {
		t.Errorf("endpoints: got %+v", ep)
	}
	if _, err := sandbox.Discover(ctx, dir, "v2"); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.Discover(ctx, dir, "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unknown validator: got %v, want not found", err)
	}

	t.Run("password grant", func(t *testing.T) {
		tokenURL := idp.TokenURL(ep.AuthURL, sandbox.Realm)
		cases := []struct {
			name       string
			url        string
			form       url.Values
			wantStatus int
			wantError  string
		}{
			{"wallet user", tokenURL, url.Values{"grant_type": {"password"}, "client_id": {"v1-wallet-ui"}, "username": {"v1_walletuser"}, "password": {"pw-1"}}, http.StatusOK, ""},
			{"wrong password", tokenURL, url.Values{"grant_type": {"password"}, "client_id": {"v1-wallet-ui"}, "username": {"v1_walletuser"}, "password": {"pw-2"}}, http.StatusUnauthorized, "invalid_grant"},
			{"another validator's user", tokenURL, url.Values{"grant_type": {"password"}, "client_id": {"v1-wallet-ui"}, "username": {"v2_walletuser"}, "password": {"pw-2"}}, http.StatusUnauthorized, "invalid_grant"},
			{"not a wallet client", tokenURL, url.Values{"grant_type": {"password"}, "client_id": {"validator-manager"}, "username": {"v1_walletuser"}, "password": {"pw-1"}}, http.StatusUnauthorized, "invalid_client"},
			{"client credentials of a public client", tokenURL, url.Values{"grant_type": {"client_credentials"}, "client_id": {"v1-wallet-ui"}}, http.StatusUnauthorized, "unauthorized_client"},
			{"client credentials, wrong secret", tokenURL, url.Values{"grant_type": {"client_credentials"}, "client_id": {"v1-validator-app"}, "client_secret": {"nope"}}, http.StatusUnauthorized, "unauthorized_client"},
			{"client credentials", tokenURL, url.Values{"grant_type": {"client_credentials"}, "client_id": {"v1-validator-app"}, "client_secret": {"app-secret"}}, http.StatusOK, ""},
			{"another grant", tokenURL, url.Values{"grant_type": {"implicit"}, "client_id": {"v1-wallet-ui"}}, http.StatusBadRequest, "unsupported_grant_type"},
			{"other realm", idp.TokenURL(ep.AuthURL, "master"), url.Values{"grant_type": {"password"}, "client_id": {"v1-wallet-ui"}, "username": {"v1_walletuser"}, "password": {"pw-1"}}, http.StatusNotFound, "Realm does not exist"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp, err := http.PostForm(tc.url, tc.form)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out map[string]any
				_ = decodeJSON(resp, &out)
				if resp.StatusCode != tc.wantStatus || (tc.wantError != "" && out["error"] != tc.wantError) || (tc.wantError == "" && out["access_token"] == nil) {
					t.Errorf("got %d %v, want %d %q", resp.StatusCode, out, tc.wantStatus, tc.wantError)
				}
			})
		}
	})

	t.Run("client-credentials token", func(t *testing.T) {
		resp, err := http.PostForm(idp.TokenURL(ep.AuthURL, sandbox.Realm), url.Values{"grant_type": {"client_credentials"}, "client_id": {"v1-validator-app"}, "client_secret": {"app-secret"}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			AccessToken string `json:"access_token"`
		}
		if err := decodeJSON(resp, &out); err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(out.AccessToken, ".")
		var claims struct{ Iss, Sub, Aud string }
		if raw, err := base64.RawURLEncoding.DecodeString(parts[min(1, len(parts)-1)]); err != nil || json.Unmarshal(raw, &claims) != nil {
			t.Fatalf("token %q: %v", out.AccessToken, err)
		}
		if claims.Sub != "sa-v1" || claims.Aud != "v1-ledger-api" || claims.Iss != ep.AuthURL+"/realms/"+sandbox.Realm {
			t.Fatalf("claims: got %+v, want the service account, its audience and the realm", claims)
		}
	})

	t.Run("realm client is the participant admin", func(t *testing.T) {
		v1, err := resolver.Resolve(ctx, "v1")
		if err != nil {
			t.Fatal(err)
		}
		c := v1.Credentials
		if c == nil || c.TokenURL != idp.TokenURL(ep.AuthURL, sandbox.Realm) || c.ClientID != "v1-validator-app" || c.ClientSecret != "app-secret" || c.Audience != "v1-ledger-api" {
			t.Fatalf("v1's credentials: %+v, want its provisioned client at the realm", c)
		}
		st, tok := grant(t, c.TokenURL, c.ClientID, c.ClientSecret)
		if st != http.StatusOK {
			t.Fatalf("grant at the realm: %d", st)
		}
		// Its subject sa-v1 is v1's participant admin (auth.ledgerApiUser), nobody at v2.
		if st, u := call(t, http.MethodGet, v1.LedgerURL, "/v2/authenticated-user", tok, nil); st != http.StatusOK || u["user"].(map[string]any)["id"] != "v1-validator-operator" {
			t.Fatalf("authenticated-user at v1: %d %v, want the operator", st, u)
		}
		v2, err := resolver.Resolve(ctx, "v2")
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := call(t, http.MethodGet, v2.LedgerURL, "/v2/authenticated-user", tok, nil); st != http.StatusForbidden {
			t.Fatalf("v1's client at v2: %d, want 403", st)
		}
	})

	walletToken, err := idp.PasswordToken(ctx, idp.TokenURL(ep.AuthURL, sandbox.Realm), "v1-wallet-ui", "v1_walletuser", "pw-1")
	if err != nil {
		t.Fatal(err)
	}
	var walletClaims struct {
		Sub, Azp          string
		PreferredUsername string `json:"preferred_username"`
	}
	if parts := strings.Split(walletToken, "."); len(parts) != 3 {
		t.Fatalf("wallet token %q is not a JWT", walletToken)
	} else if raw, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || json.Unmarshal(raw, &walletClaims) != nil {
		t.Fatalf("wallet token %q: %v", walletToken, err)
	}
	if walletClaims.Sub != "id-v1_walletuser" || walletClaims.PreferredUsername != "v1_walletuser" || walletClaims.Azp != "v1-wallet-ui" {
		t.Fatalf("wallet token's claims: %+v, want the user's id as subject, as Keycloak's", walletClaims)
	}
	otherToken, err := idp.PasswordToken(ctx, idp.TokenURL(ep.AuthURL, sandbox.Realm), "v2-wallet-ui", "v2_walletuser", "pw-2")
	if err != nil {
		t.Fatal(err)
	}
	_, operatorToken := grant(t, ep.AuthURL+"/oauth2/token", sandbox.ClientID, n.ClientSecret())

	t.Run("validator app", func(t *testing.T) {
		const ts = "2025-07-01T10:30:00.000Z"
		snapshot := "/api/validator/v0/admin/domain/data-snapshot?"
		cases := []struct {
			name, path, token string
			wantStatus        int
			wantMigration     float64
		}{
			{"snapshot for the wallet user", snapshot + url.Values{"timestamp": {ts}, "force": {"true"}}.Encode(), walletToken, http.StatusOK, 4},
			{"snapshot for the operator's grant", snapshot + url.Values{"timestamp": {ts}}.Encode(), operatorToken, http.StatusOK, 4},
			{"snapshot at a given migration id", snapshot + url.Values{"timestamp": {ts}, "migration_id": {"7"}}.Encode(), walletToken, http.StatusOK, 7},
			{"snapshot without a token", snapshot + url.Values{"timestamp": {ts}}.Encode(), "", http.StatusUnauthorized, 0},
			{"snapshot for another validator's user", snapshot + url.Values{"timestamp": {ts}}.Encode(), otherToken, http.StatusForbidden, 0},
			{"snapshot at a local time", snapshot + url.Values{"timestamp": {"2025-07-01T12:30:00+02:00"}}.Encode(), walletToken, http.StatusBadRequest, 0},
			{"livez", "/api/validator/livez", "", http.StatusOK, 0},
			{"a user's token on another admin endpoint", "/api/validator/v0/admin/users", walletToken, http.StatusUnauthorized, 0},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ep.ValidatorAppURL+tc.path, nil)
				if tc.token != "" {
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != tc.wantStatus {
					t.Fatalf("got %d, want %d", resp.StatusCode, tc.wantStatus)
				}
				if tc.wantMigration == 0 {
					return
				}
				var out struct {
					MigrationID  float64 `json:"migration_id"`
					DataSnapshot struct {
						Participant  struct{ ID string } `json:"participant"`
						ACSSnapshot  string              `json:"acs_snapshot"`
						ACSTimestamp string              `json:"acs_timestamp"`
						MigrationID  float64             `json:"migration_id"`
						DomainID     string              `json:"domain_id"`
					} `json:"data_snapshot"`
				}
				if err := decodeJSON(resp, &out); err != nil {
					t.Fatal(err)
				}
				d := out.DataSnapshot
				acs, _ := base64.StdEncoding.DecodeString(d.ACSSnapshot)
				if out.MigrationID != tc.wantMigration || d.MigrationID != tc.wantMigration || !strings.HasPrefix(d.Participant.ID, "participant-v1::") ||
					d.ACSTimestamp != "2025-07-01T10:30:00Z" || !strings.HasPrefix(d.DomainID, "global-domain::") || !strings.Contains(string(acs), "v1-validator-1::") {
					t.Errorf("got %+v (acs %s), want v1's dump at %s, migration %v", out, acs, ts, tc.wantMigration)
				}
			})
		}
	})

	n.Close()
	if _, err := os.Stat(filepath.Join(dir, "network.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("network.json after Close: %v, want it removed", err)
	}
	if _, err := sandbox.Discover(ctx, dir, "v1"); !errors.Is(err, sandbox.ErrNotRunning) {
		t.Errorf("discovery after Close: got %v, want ErrNotRunning", err)
	}
}
