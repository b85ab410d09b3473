package idp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestTokenURL(t *testing.T) {
	tests := []struct {
		base, realm, want string
	}{
		{"https://kc.example.com", "wallets", "https://kc.example.com/realms/wallets/protocol/openid-connect/token"},
		{"https://kc.example.com/auth/", "wallets", "https://kc.example.com/auth/realms/wallets/protocol/openid-connect/token"},
	}
	for _, tt := range tests {
		if got := TokenURL(tt.base, tt.realm); got != tt.want {
			t.Errorf("TokenURL(%q, %q): got %q, want %q", tt.base, tt.realm, got, tt.want)
		}
	}
}

func TestPasswordToken(t *testing.T) {
	f := newFakeKeycloak(t)
	f.publicClients["val1-wallet-ui"] = true
	user, err := f.adapter(t).CreateWalletUser(context.Background(), "val1", "", testPassword("val1"))
	if err != nil {
		t.Fatal(err)
	}
	tokenURL := TokenURL(f.srv.URL, f.realm)

	tests := []struct {
		name      string
		url       string
		client    string
		password  string
		want      string
		wantCode  bool // a domain error of CodeUnauthenticated
		wantError string
	}{
		{name: "ok", url: tokenURL, client: "val1-wallet-ui", password: user.TemporaryPassword, want: "user-token-val1_walletuser"},
		{name: "wrong password", url: tokenURL, client: "val1-wallet-ui", password: "Wrong-Passw0rd!", wantCode: true, wantError: "401 Unauthorized: invalid_grant: Invalid user credentials"},
		{name: "unknown client", url: tokenURL, client: "nobody", password: user.TemporaryPassword, wantCode: true, wantError: "401 Unauthorized: unauthorized_client"},
		{name: "unreachable", url: "http://127.0.0.1:1/realms/wallets/protocol/openid-connect/token", client: "val1-wallet-ui", password: user.TemporaryPassword, wantError: "connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PasswordToken(context.Background(), tt.url, tt.client, user.Username, tt.password)
			if tt.wantError == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if got != tt.want {
					t.Errorf("got token %q, want %q", got, tt.want)
				}
				calls := f.callsTo(http.MethodPost, "/token")
				form, _ := url.ParseQuery(calls[len(calls)-1].Body)
				wantForm := url.Values{"grant_type": {"password"}, "client_id": {tt.client}, "username": {user.Username}, "password": {tt.password}}
				if form.Encode() != wantForm.Encode() {
					t.Errorf("got form %v, want exactly %v", form, wantForm)
				}
				return
			}
			if err == nil {
				t.Fatalf("got token %q, want an error", got)
			}
			if !strings.Contains(err.Error(), tt.wantError) || !strings.HasPrefix(err.Error(), "identity provider: password token") {
				t.Errorf("got error %q, want identity provider: password token ... %s", err, tt.wantError)
			}
			if got := errors.Is(err, &domain.Error{Code: domain.CodeUnauthenticated}); got != tt.wantCode {
				t.Errorf("got unauthenticated %v, want %v", got, tt.wantCode)
			}
			if strings.Contains(err.Error(), tt.password) {
				t.Errorf("got error %q, want no password in it", err)
			}
		})
	}
}
