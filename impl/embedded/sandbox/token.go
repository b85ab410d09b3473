package sandbox

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// The token endpoint is an OAuth2 client-credentials server with OpenID
// Connect discovery and a JWKS, so that Canton's AuthTokenProvider works
// against it unchanged.

const tokenTTL = 10 * time.Minute

const tokenKid = "sandbox-1"

// newTokenKey is a signing key for the token endpoint, kept in the state so
// that tokens outlive a restart.
func newTokenKey() ([]byte, error) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return x509.MarshalPKCS8PrivateKey(ec)
}

// parseTokenKey reads the state's TokenKey.
func parseTokenKey(der []byte) (*ecdsa.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("its tokenKey: %w", err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("its tokenKey is not an EC key")
	}
	return ec, nil
}

var b64 = base64.RawURLEncoding

type claims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud,omitempty"`
	Scope    string `json:"scope,omitempty"`
	// AuthorizedParty (Keycloak's azp) is set on users' tokens only.
	AuthorizedParty   string `json:"azp,omitempty"`
	PreferredUsername string `json:"preferred_username,omitempty"`
	IssuedAt          int64  `json:"iat"`
	Expiry            int64  `json:"exp"`
}

func (n *Network) issue(c claims) (string, error) {
	body, _ := json.Marshal(c)
	head := jws.NewHeaders()
	_ = head.Set(jws.KeyIDKey, tokenKid)
	_ = head.Set(jws.TypeKey, "JWT")
	tok, err := jws.Sign(body, jws.WithKey(jwa.ES256, n.signer, jws.WithProtectedHeaders(head)))
	return string(tok), err
}

// subjectLocked is the client a request's valid token was issued to; "" for
// none, and for a user's token (password grant).
func (n *Network) subjectLocked(r *http.Request) string {
	c, ok := n.claimsLocked(r)
	if !ok || c.AuthorizedParty != "" {
		return ""
	}
	return c.Subject
}

// claimsLocked are the claims of a request's token when it is valid.
func (n *Network) claimsLocked(r *http.Request) (claims, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return claims{}, false
	}
	var msg jws.Message
	raw, err := jws.Verify([]byte(tok), jws.WithKey(jwa.ES256, &n.signer.PublicKey), jws.WithMessage(&msg), jws.WithCompact())
	if err != nil || len(msg.Signatures()) != 1 || msg.Signatures()[0].ProtectedHeaders().Algorithm() != jwa.ES256 {
		return claims{}, false
	}
	var c claims
	if json.Unmarshal(raw, &c) != nil || time.Now().Unix() >= c.Expiry || c.Subject == "" {
		return claims{}, false
	}
	return c, true
}

// tokenUserLocked is the user a token of client sub acts as: the operator for
// the sandbox's grant, the validator's client and the participant's admin user
// (as CANTON_PARTICIPANT_ADMIN_USER_NAME makes it), the user sub otherwise.
func tokenUserLocked(ns *nodeState, sub string) *user {
	if sub == ClientID || (ns.LedgerClientID != "" && sub == ns.LedgerClientID) || (ns.AdminUser != "" && sub == ns.AdminUser) {
		return ns.Users[ns.OperatorUser]
	}
	return ns.Users[sub]
}

// registerClient makes a validator's ledger API client one of the token endpoint's.
func (n *Network) registerClient(validator, id, secret string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if id == ClientID {
		return fmt.Errorf("validator %q: ledger API client id %q is the sandbox's own", validator, id)
	}
	n.clients[id] = secret
	if ns := n.st.Nodes[validator]; ns != nil && ns.LedgerClientID != id {
		ns.LedgerClientID = id
		return n.saveLocked()
	}
	return nil
}

// configureUsers records the admin and wallet users a validator's configuration names.
func (n *Network) configureUsers(validator, admin, wallet string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	ns := n.st.Nodes[validator]
	if ns == nil || (ns.AdminUser == admin && ns.WalletUser == wallet) {
		return nil
	}
	ns.AdminUser, ns.WalletUser = admin, wallet
	return n.saveLocked()
}

// token is the client-credentials grant (client_secret_basic or client_secret_post).
func (n *Network) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	n.mu.Lock()
	want := n.clients[id] // "" for a client that is unknown
	if id == ClientID {
		want = n.st.ClientSecret
	}
	n.mu.Unlock()
	if want == "" || !hmac.Equal([]byte(secret), []byte(want)) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	n.writeToken(w, claims{Issuer: n.scan.url, Subject: id, Audience: r.PostForm.Get("audience"), Scope: r.PostForm.Get("scope")}, "", false)
}

// writeToken answers c as an access token, with an ID token of the same
// claims for idAudience when set (the authorization-code flow's).
func (n *Network) writeToken(w http.ResponseWriter, c claims, idAudience string, withScope bool) {
	now := time.Now()
	c.IssuedAt, c.Expiry = now.Unix(), now.Add(tokenTTL).Unix()
	access, err := n.issue(c)
	body := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(tokenTTL.Seconds())}
	if withScope {
		body["scope"] = c.Scope
	}
	if err == nil && idAudience != "" {
		c.Audience, c.Scope = idAudience, ""
		body["id_token"], err = n.issue(c)
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, body)
}

func (n *Network) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                n.scan.url,
		"token_endpoint":                        n.scan.url + "/oauth2/token",
		"jwks_uri":                              n.scan.url + "/.well-known/jwks.json",
		"grant_types_supported":                 []string{"client_credentials"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"response_types_supported":              []string{"token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
	})
}

// jwks publishes the signing key (RFC 7517).
func (n *Network) jwks(w http.ResponseWriter, _ *http.Request) {
	coord := func(v *big.Int) string { return b64.EncodeToString(v.FillBytes(make([]byte, 32))) }
	writeJSON(w, http.StatusOK, map[string]any{"keys": []any{map[string]string{
		"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": tokenKid,
		"x": coord(n.signer.X), "y": coord(n.signer.Y),
	}}})
}

func (n *Network) authorized(r *http.Request) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.subjectLocked(r) != ""
}

type tokenUserKey struct{}

// tokenUser is the user the ledger wrapper authenticated the request as.
func tokenUser(r *http.Request) string {
	id, _ := r.Context().Value(tokenUserKey{}).(string)
	return id
}
