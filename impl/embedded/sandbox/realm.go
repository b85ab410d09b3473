package sandbox

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// Realm is the network's one realm, served at /realms/<Realm> as Keycloak
// serves one, so that recovery obtains a wallet user's token there.
const Realm = "sandbox"

// Suffixes of a validator's wallet client and user, as the identity provider names them.
const (
	walletClientSuffix = "-wallet-ui"
	walletUserSuffix   = "_walletuser"
)

// Passwords checks a user's password (impl/idp.Local is one): the user's id,
// the subject of its tokens, or an error for a wrong password or unknown user.
type Passwords interface {
	CheckPassword(ctx context.Context, username, password string) (id string, err error)
}

// Clients authenticates the realm's confidential clients (impl/idp.Local is
// one), answering their service-account user and audience.
type Clients interface {
	CheckClient(ctx context.Context, clientID, secret string) (subject, audience string, err error)
}

func (n *Network) realmURL() string { return n.scan.url + "/realms/" + Realm }

func (n *Network) realmTokenURL() string { return n.realmURL() + "/protocol/openid-connect/token" }

// URL is the network's base URL, under which the realm is, as under Keycloak's.
func (n *Network) URL() string { return n.scan.url }

// inRealm answers 404 for a realm other than Realm, as Keycloak does.
func inRealm(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("realm") != Realm {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "Realm does not exist"})
			return
		}
		h(w, r)
	}
}

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

// clientToken is the client-credentials grant, with Keycloak's error answers.
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

// passwordToken is the password grant of a validator's wallet client, with
// Keycloak's errors; the admin endpoints refuse its tokens but the data snapshot's.
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
