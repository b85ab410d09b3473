package sandbox

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// Realm is the one realm of the token endpoint's password grant, served at
// /realms/<Realm>/protocol/openid-connect/token as Keycloak serves a realm's:
// the recovery procedure obtains a wallet user's token there with
// --auth-url <network URL> --realm sandbox.
const Realm = "sandbox"

// Suffixes of a validator's wallet client and wallet user
// (<validator>-wallet-ui, <validator>_walletuser), as the identity provider
// names them.
const (
	walletClientSuffix = "-wallet-ui"
	walletUserSuffix   = "_walletuser"
)

// Passwords checks a user's password and returns the user's id, the
// subject of its tokens (as Keycloak's); the embedded default's local
// identity provider (impl/idp.Local) is one. A wrong password or an
// unknown user is an error.
type Passwords interface {
	CheckPassword(ctx context.Context, username, password string) (id string, err error)
}

// Clients authenticates the confidential clients of the realm; the
// embedded default's local identity provider (impl/idp.Local) is one. Its
// tokens' subject is the client's service-account user and their audience
// the client's.
type Clients interface {
	CheckClient(ctx context.Context, clientID, secret string) (subject, audience string, err error)
}

// realmURL is the realm's issuer, as Keycloak names it.
func (n *Network) realmURL() string { return n.scan.url + "/realms/" + Realm }

// realmTokenURL is the realm's token endpoint, as Keycloak places it.
func (n *Network) realmTokenURL() string { return n.realmURL() + "/protocol/openid-connect/token" }

// URL is the network's base URL: the realm's endpoints are under
// <URL>/realms/<Realm>, as under a Keycloak base URL.
func (n *Network) URL() string { return n.scan.url }

// inRealm answers 404 for a realm other than Realm, as Keycloak does, and
// lets h answer for Realm.
func inRealm(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("realm") != Realm {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "Realm does not exist"})
			return
		}
		h(w, r)
	}
}

// realmToken is the realm's token endpoint: the password grant of wallet
// users, the client-credentials grant of the clients the identity provider
// made for validators and the authorization-code grant of their UIs'
// clients (authcode.go).
func (n *Network) realmToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err == nil {
		switch r.PostForm.Get("grant_type") {
		case "client_credentials":
			n.clientToken(w, r)
			return
		case "authorization_code":
			n.codeToken(w, r)
			return
		}
	}
	n.passwordToken(w, r)
}

// clientToken is the client-credentials grant (client_secret_basic or
// client_secret_post) with Keycloak's error answers.
func (n *Network) clientToken(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	var sub, aud string
	err := errors.New("no clients")
	if n.opts.Clients != nil && id != "" && secret != "" {
		sub, aud, err = n.opts.Clients.CheckClient(r.Context(), id, secret)
	}
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized_client", "error_description": "Invalid client or Invalid client credentials"})
		return
	}
	n.writeToken(w, claims{Issuer: n.realmURL(), Subject: sub, Audience: aud, Scope: "profile email"}, "", true)
}

// realmDiscovery is the realm's OpenID Provider Metadata.
func (n *Network) realmDiscovery(w http.ResponseWriter, r *http.Request) {
	base := n.realmURL()
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                base,
		"token_endpoint":                        n.realmTokenURL(),
		"jwks_uri":                              base + "/protocol/openid-connect/certs",
		"authorization_endpoint":                base + "/protocol/openid-connect/auth",
		"grant_types_supported":                 []string{"authorization_code", "password", "client_credentials"},
		"code_challenge_methods_supported":      []string{"plain", "S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"response_types_supported":              []string{"code", "token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
	})
}

// passwordToken is the resource-owner password grant (RFC 6749 section
// 4.3) of a validator's public wallet client for its wallet user, with
// Keycloak's error answers. Its tokens are users' tokens, their subject
// the user's id: the admin endpoints refuse them, except a validator's data
// snapshot for its operator wallet user (snapshot.go).
func (n *Network) passwordToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "password" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Unsupported grant_type"})
		return
	}
	client, username, password := r.PostForm.Get("client_id"), r.PostForm.Get("username"), r.PostForm.Get("password")
	validator, ok := strings.CutSuffix(client, walletClientSuffix)
	if !ok || validator == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "Invalid client or Invalid client credentials"})
		return
	}
	invalid := func() {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_grant", "error_description": "Invalid user credentials"})
	}
	if username != validator+walletUserSuffix || password == "" || n.opts.Passwords == nil {
		invalid()
		return
	}
	id, err := n.opts.Passwords.CheckPassword(r.Context(), username, password)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		invalid()
		return
	}
	n.writeToken(w, claims{Issuer: n.realmURL(), Subject: id, PreferredUsername: username, AuthorizedParty: client, Scope: "openid profile"}, "", true)
}
