package sandbox_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
	"github.com/validator-manager/validator-manager/impl/idp"
)

// TestUILoginWithPKCE: both UIs of a validator log in at the realm through
// the authorization-code flow with PKCE (S256), against the local identity
// provider's clients and wallet user: a redirect URI the client registered
// yields a code and the code a token; one it did not register is refused
// with Keycloak's error page, never redirected to.
func TestUILoginWithPKCE(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	local, err := idp.OpenLocal(filepath.Join(dir, "idp"), idp.LocalOptions{UIs: idp.UIs{Template: "https://{ui}.{validator}.ui.test"}})
	if err != nil {
		t.Fatal(err)
	}
	user, err := local.CreateWalletUser(ctx, "v1", "claim-1", "pw-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.ProvisionClients(ctx, "v1", "claim-1"); err != nil {
		t.Fatal(err)
	}
	n, err := sandbox.Open(filepath.Join(dir, "sandbox"), sandbox.Options{Passwords: local, Clients: local, Redirects: local})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, n)
	realm := n.URL() + "/realms/" + sandbox.Realm + "/protocol/openid-connect"
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	verifier := strings.Repeat("verifier-0123456789_", 3) // 60 unreserved characters
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	authURL := func(client, redirect, responseType string) string {
		return realm + "/auth?" + url.Values{"client_id": {client}, "redirect_uri": {redirect}, "response_type": {responseType},
			"scope": {"openid"}, "state": {"st-1"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}.Encode()
	}
	read := func(resp *http.Response) string {
		t.Helper()
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// login shows the form and submits the wallet user's credentials.
	login := func(client, redirect, password string) *http.Response {
		t.Helper()
		u := authURL(client, redirect, "code")
		resp, err := noFollow.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		if body := read(resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="kc-form-login"`) {
			t.Fatalf("login form: got %d %q", resp.StatusCode, body)
		}
		resp, err = noFollow.PostForm(u, url.Values{"username": {"v1_walletuser"}, "password": {password}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	token := func(form url.Values) (int, map[string]any) {
		t.Helper()
		form.Set("grant_type", "authorization_code")
		resp, err := http.PostForm(realm+"/token", form)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(read(resp)), &out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	// code logs in at redirect and answers the code it was sent back with.
	code := func(client, redirect string) string {
		t.Helper()
		resp := login(client, redirect, "pw-1")
		read(resp)
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("login: got %d, want 302", resp.StatusCode)
		}
		back, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || !strings.HasPrefix(back.String(), redirect) || back.Query().Get("state") != "st-1" || back.Query().Get("code") == "" {
			t.Fatalf("redirected to %q, want %s with the code and the state", resp.Header.Get("Location"), redirect)
		}
		return back.Query().Get("code")
	}

	for _, ui := range []string{"wallet", "ans"} {
		client, redirect := "v1-"+ui+"-ui", "https://"+ui+".v1.ui.test/callback"
		t.Run(ui, func(t *testing.T) {
			c := code(client, redirect)
			status, out := token(url.Values{"client_id": {client}, "code": {c}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
			if status != http.StatusOK || out["token_type"] != "Bearer" || out["access_token"] == nil || out["id_token"] == nil {
				t.Fatalf("token: got %d %v", status, out)
			}
			claims := payload(t, out["access_token"].(string))
			if claims["sub"] != user.ID || claims["aud"] != "v1-ledger-api" || claims["azp"] != client || claims["preferred_username"] != "v1_walletuser" {
				t.Fatalf("access token claims: got %v", claims)
			}
			// A code is good once.
			if status, out := token(url.Values{"client_id": {client}, "code": {c}, "redirect_uri": {redirect}, "code_verifier": {verifier}}); status != http.StatusBadRequest || out["error"] != "invalid_grant" || out["error_description"] != "Code not valid" {
				t.Fatalf("the code again: got %d %v", status, out)
			}

			// Redirect URIs the client did not register: Keycloak's error
			// page, no redirect, no login form.
			for _, bad := range []string{"https://evil.test/callback", "https://" + other(ui) + ".v1.ui.test/callback", "https://" + ui + ".v2.ui.test/", ""} {
				resp, err := noFollow.Get(authURL(client, bad, "code"))
				if err != nil {
					t.Fatal(err)
				}
				body := read(resp)
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Invalid parameter: redirect_uri") || resp.Header.Get("Location") != "" {
					t.Errorf("redirect_uri %q: got %d %q, want 400 Invalid parameter: redirect_uri", bad, resp.StatusCode, body)
				}
			}

			// The token request's own checks, each on a fresh code.
			for _, tc := range []struct {
				name, description string
				form              url.Values
			}{
				{"wrong verifier", "PKCE verification failed: Code mismatch", url.Values{"client_id": {client}, "redirect_uri": {redirect}, "code_verifier": {strings.Repeat("x", 43)}}},
				{"no verifier", "PKCE code verifier not specified", url.Values{"client_id": {client}, "redirect_uri": {redirect}}},
				{"another redirect_uri", "Incorrect redirect_uri", url.Values{"client_id": {client}, "redirect_uri": {redirect + "/x"}, "code_verifier": {verifier}}},
				{"another client", "Auth error", url.Values{"client_id": {"v1-" + other(ui) + "-ui"}, "redirect_uri": {redirect}, "code_verifier": {verifier}}},
			} {
				tc.form.Set("code", code(client, redirect))
				if status, out := token(tc.form); status != http.StatusBadRequest || out["error"] != "invalid_grant" || out["error_description"] != tc.description {
					t.Errorf("%s: got %d %v, want 400 invalid_grant %q", tc.name, status, out, tc.description)
				}
			}
		})
	}

	t.Run("wrong password: the form again", func(t *testing.T) {
		resp := login("v1-wallet-ui", "https://wallet.v1.ui.test/", "pw-2")
		if body := read(resp); resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "" || !strings.Contains(body, "Invalid username or password.") {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("unknown client: error page", func(t *testing.T) {
		resp, err := noFollow.Get(authURL("v9-wallet-ui", "https://wallet.v9.ui.test/", "code"))
		if err != nil {
			t.Fatal(err)
		}
		if body := read(resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Client not found.") {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("unsupported response type: redirected with the error", func(t *testing.T) {
		resp, err := noFollow.Get(authURL("v1-wallet-ui", "https://wallet.v1.ui.test/", "token"))
		if err != nil {
			t.Fatal(err)
		}
		read(resp)
		back, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || back.Query().Get("error") != "unsupported_response_type" || back.Query().Get("state") != "st-1" {
			t.Fatalf("got %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
}

func other(ui string) string {
	if ui == "wallet" {
		return "ans"
	}
	return "wallet"
}

// payload decodes a JWT's claims (the signature is the JWKS's business).
func payload(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
