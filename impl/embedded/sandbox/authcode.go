package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// The authorization-code flow with PKCE of the validators' UI clients, as
// Keycloak serves it: a login form for the wallet user, then a one-time code.

// Redirects authorizes a public client's redirect URI (impl/idp.Local is one):
// the aud of its tokens, or an error in the words of Keycloak's error page.
type Redirects interface {
	CheckRedirect(ctx context.Context, clientID, redirect string) (audience string, err error)
}

// codeTTL is Keycloak's default accessCodeLifespan.
const codeTTL = time.Minute

var uiClientSuffixes = []string{walletClientSuffix, "-ans-ui"}

type grant struct {
	client, redirect, challenge, method string
	subject, username, audience         string
	expiry                              time.Time
}

// authCodes are the codes issued and not yet exchanged; each is used once.
type authCodes struct {
	mu sync.Mutex
	m  map[string]grant
}

func (c *authCodes) put(g grant) string {
	b := make([]byte, 32)
	rand.Read(b)
	code := base64.RawURLEncoding.EncodeToString(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, old := range c.m { // expired codes go as new ones come
		if time.Now().After(old.expiry) {
			delete(c.m, k)
		}
	}
	c.m[code] = g
	return code
}

// take answers code's grant if it has not expired; a code is taken once.
func (c *authCodes) take(code string) (grant, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.m[code]
	delete(c.m, code)
	return g, ok && time.Now().Before(g.expiry)
}

// errorPage answers what Keycloak cannot redirect back (unknown client or
// redirect URI): never a redirect to the URI it was given.
var errorPage = template.Must(template.New("error").Parse(`<!DOCTYPE html>
<html><head><title>Error</title></head><body><p id="kc-error-message" class="instruction">{{.}}</p></body></html>
`))

var loginPage = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html><head><title>Sign in</title></head><body>
{{if .Error}}<p id="input-error">{{.Error}}</p>{{end}}
<form id="kc-form-login" method="post" action="{{.Action}}">
<input id="username" name="username" type="text" autocomplete="username">
<input id="password" name="password" type="password" autocomplete="current-password">
<input id="kc-login" type="submit" value="Sign In">
</form></body></html>
`))

// authorize is the realm's authorization endpoint, the login form (GET) and
// its submission (POST); its checks are Keycloak's, in Keycloak's order.
func (n *Network) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	client, redirect, state := q.Get("client_id"), q.Get("redirect_uri"), q.Get("state")
	page := func(status int, t *template.Template, data any) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		t.Execute(w, data)
	}
	validator := ""
	for _, s := range uiClientSuffixes {
		if v, ok := strings.CutSuffix(client, s); ok && v != "" {
			validator = v
		}
	}
	if validator == "" || n.opts.Redirects == nil {
		page(http.StatusBadRequest, errorPage, "Client not found.")
		return
	}
	audience, err := n.opts.Redirects.CheckRedirect(r.Context(), client, redirect)
	if err != nil {
		page(http.StatusBadRequest, errorPage, err.Error())
		return
	}
	back := func(params url.Values) {
		u, _ := url.Parse(redirect)
		v := u.Query()
		maps.Copy(v, params)
		if state != "" {
			v.Set("state", state)
		}
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	fail := func(code, description string) {
		back(url.Values{"error": {code}, "error_description": {description}})
	}
	challenge, method := q.Get("code_challenge"), q.Get("code_challenge_method")
	switch {
	case q.Get("response_type") == "":
		fail("invalid_request", "Missing parameter: response_type")
		return
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "Client is not allowed to initiate browser login with given response_type. Standard flow is disabled for the client.")
		return
	case challenge == "" && method != "":
		fail("invalid_request", "Missing parameter: code_challenge")
		return
	case challenge != "" && method != "" && method != "S256" && method != "plain":
		fail("invalid_request", "Invalid parameter: code_challenge_method")
		return
	case challenge != "" && !verifierForm.MatchString(challenge):
		fail("invalid_request", "Invalid parameter: code_challenge")
		return
	}
	if method == "" && challenge != "" {
		method = "plain"
	}
	if r.Method != http.MethodPost {
		page(http.StatusOK, loginPage, map[string]string{"Action": r.URL.RequestURI()})
		return
	}
	username, password := strings.ToLower(r.PostFormValue("username")), r.PostFormValue("password")
	subject, err := "", errors.New("invalid user credentials")
	if username == strings.ToLower(validator)+walletUserSuffix && password != "" && n.opts.Passwords != nil {
		subject, err = n.opts.Passwords.CheckPassword(r.Context(), username, password)
	}
	if err != nil {
		// Keycloak shows the form again.
		page(http.StatusOK, loginPage, map[string]string{"Action": r.URL.RequestURI(), "Error": "Invalid username or password."})
		return
	}
	code := n.codes.put(grant{client: client, redirect: redirect, challenge: challenge, method: method,
		subject: subject, username: username, audience: audience, expiry: time.Now().Add(codeTTL)})
	back(url.Values{"code": {code}, "iss": {n.realmURL()}})
}

// verifierForm is RFC 7636's code_verifier, which an S256 challenge fits too.
var verifierForm = regexp.MustCompile(`^[A-Za-z0-9\-._~]{43,128}$`)

// codeToken is the authorization_code grant of a public client, with Keycloak's errors.
func (n *Network) codeToken(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	invalid := func(description string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": description})
	}
	code, client := f.Get("code"), f.Get("client_id")
	if code == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "Missing parameter: code"})
		return
	}
	if client == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client", "error_description": "Missing parameter: client_id"})
		return
	}
	g, ok := n.codes.take(code)
	switch {
	case !ok:
		invalid("Code not valid")
		return
	case g.client != client:
		invalid("Auth error")
		return
	case f.Get("redirect_uri") != g.redirect:
		invalid("Incorrect redirect_uri")
		return
	}
	if g.challenge != "" {
		verifier := f.Get("code_verifier")
		switch {
		case verifier == "":
			invalid("PKCE code verifier not specified")
			return
		case !verifierForm.MatchString(verifier):
			invalid("PKCE invalid code verifier")
			return
		}
		got := verifier
		if g.method == "S256" {
			got = oauth2.S256ChallengeFromVerifier(verifier)
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(g.challenge)) != 1 {
			invalid("PKCE verification failed: Code mismatch")
			return
		}
	}
	// The ID token is the client's.
	n.writeToken(w, claims{Issuer: n.realmURL(), Subject: g.subject, Audience: g.audience, PreferredUsername: g.username, AuthorizedParty: client,
		Scope: "openid profile"}, client, true)
}
