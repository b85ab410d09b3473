package idp

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// fakeKeycloak speaks the parts of Keycloak's REST API the adapter uses,
// on Keycloak's own paths and payloads, and checks requests the way
// Keycloak does: client authentication at the token endpoint, a valid
// bearer token on admin calls, JSON bodies.
type fakeKeycloak struct {
	t      *testing.T
	srv    *httptest.Server
	realm  string
	client string
	secret string
	clock  *clock

	mu sync.Mutex
	// tokenLifetime is expires_in of the admin tokens it issues.
	tokenLifetime time.Duration
	tokens        map[string]time.Time // access token -> expiry
	issued        int
	users         map[string]fakeUser // id -> user
	calls         []call
	// fail, when set, answers every admin call with this status; the
	// body echoes the request to catch an adapter that copies it into errors.
	fail int
	// failToken, when set, answers token requests with this status,
	// echoing the form (client secret, password) in the description.
	failToken int
	// noLocation drops the Location header of 201 answers.
	noLocation bool
	// publicClients accept the password grant.
	publicClients map[string]bool
	// realmClients are the clients made through the admin API, by id.
	realmClients map[string]*fakeClient
}

// fakeClient is a client as Keycloak keeps it: a confidential one has a
// secret and a service-account user.
type fakeClient struct {
	rep            clientRep
	secret         string
	serviceAccount string
}

// clientRep is Keycloak's ClientRepresentation, the fields the adapter sends.
type clientRep struct {
	ID                        string              `json:"id,omitempty"`
	ClientID                  string              `json:"clientId"`
	Protocol                  string              `json:"protocol,omitempty"`
	Enabled                   *bool               `json:"enabled,omitempty"`
	PublicClient              *bool               `json:"publicClient,omitempty"`
	ServiceAccountsEnabled    *bool               `json:"serviceAccountsEnabled,omitempty"`
	StandardFlowEnabled       *bool               `json:"standardFlowEnabled,omitempty"`
	DirectAccessGrantsEnabled *bool               `json:"directAccessGrantsEnabled,omitempty"`
	RedirectURIs              *[]string           `json:"redirectUris,omitempty"`
	WebOrigins                *[]string           `json:"webOrigins,omitempty"`
	Attributes                map[string]string   `json:"attributes,omitempty"`
	ProtocolMappers           []protocolMapperRep `json:"protocolMappers,omitempty"`
}

// protocolMapperRep is Keycloak's ProtocolMapperRepresentation.
type protocolMapperRep struct {
	ID             string            `json:"id,omitempty"`
	Name           string            `json:"name"`
	Protocol       string            `json:"protocol"`
	ProtocolMapper string            `json:"protocolMapper"`
	Config         map[string]string `json:"config,omitempty"`
}

type fakeUser struct {
	ID              string
	Username        string
	Enabled         bool
	RequiredActions []string
	Password        string
	Temporary       bool
	Attributes      map[string][]string
}

// call is one request the fake received.
type call struct {
	Method string
	Path   string
	Query  string
	Body   string
}

// clock is the time shared by the adapter and the fake.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newFakeKeycloak(t *testing.T) *fakeKeycloak {
	t.Helper()
	f := &fakeKeycloak{
		t:             t,
		realm:         "wallets",
		client:        "validator-manager",
		secret:        "s3cr3t-Client-Secret-Value",
		clock:         &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
		tokenLifetime: 300 * time.Second,
		tokens:        map[string]time.Time{},
		users:         map[string]fakeUser{},
		publicClients: map[string]bool{},
		realmClients:  map[string]*fakeClient{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /realms/{realm}/protocol/openid-connect/token", f.token)
	mux.HandleFunc("POST /admin/realms/{realm}/users", f.admin(f.createUser))
	mux.HandleFunc("GET /admin/realms/{realm}/users", f.admin(f.listUsers))
	mux.HandleFunc("GET /admin/realms/{realm}/users/{id}", f.admin(f.getUser))
	mux.HandleFunc("DELETE /admin/realms/{realm}/users/{id}", f.admin(f.deleteUser))
	mux.HandleFunc("PUT /admin/realms/{realm}/users/{id}/reset-password", f.admin(f.resetPassword))
	mux.HandleFunc("POST /admin/realms/{realm}/clients", f.admin(f.createClient))
	mux.HandleFunc("GET /admin/realms/{realm}/clients", f.admin(f.listClients))
	mux.HandleFunc("PUT /admin/realms/{realm}/clients/{id}", f.admin(f.updateClient))
	mux.HandleFunc("DELETE /admin/realms/{realm}/clients/{id}", f.admin(f.deleteClient))
	mux.HandleFunc("GET /admin/realms/{realm}/clients/{id}/client-secret", f.admin(f.clientSecret))
	mux.HandleFunc("GET /admin/realms/{realm}/clients/{id}/service-account-user", f.admin(f.serviceAccountUser))
	mux.HandleFunc("POST /admin/realms/{realm}/clients/{id}/protocol-mappers/models", f.admin(f.createMapper))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		f.record(r, "")
		t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Unable to find matching target resource method"})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeKeycloak) config() KeycloakConfig {
	return KeycloakConfig{BaseURL: f.srv.URL, Realm: f.realm, ClientID: f.client, ClientSecret: f.secret}
}

// adapter is a Keycloak adapter on the fake's clock.
func (f *fakeKeycloak) adapter(t *testing.T) *Keycloak {
	t.Helper()
	k, err := NewKeycloak(f.config())
	if err != nil {
		t.Fatal(err)
	}
	k.now = f.clock.now
	return k
}

func (f *fakeKeycloak) record(r *http.Request, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body})
}

// callsTo counts recorded requests of method on paths ending in suffix.
func (f *fakeKeycloak) callsTo(method, suffix string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.Method == method && strings.HasSuffix(c.Path, suffix) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeKeycloak) user(id string) (fakeUser, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[id]
	return u, ok
}

func (f *fakeKeycloak) userCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.users)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// revokeTokens forgets every token it issued, as a restarted Keycloak with
// new keys would.
func (f *fakeKeycloak) revokeTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = map[string]time.Time{}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// token is the realm's OIDC token endpoint.
func (f *fakeKeycloak) token(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		f.record(r, "")
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "wrong content type " + ct})
		return
	}
	if err := r.ParseForm(); err != nil {
		f.t.Errorf("token request form: %v", err)
	}
	form := r.PostForm
	f.record(r, form.Encode())
	if r.PathValue("realm") != f.realm {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Realm does not exist"})
		return
	}
	f.mu.Lock()
	failToken := f.failToken
	f.mu.Unlock()
	if failToken != 0 {
		writeJSON(w, failToken, map[string]string{"error": "invalid_request", "error_description": "rejected " + form.Encode()})
		return
	}
	// Client authentication: client_secret_basic or client_secret_post.
	clientID, secret, basic := r.BasicAuth()
	if !basic {
		clientID, secret = form.Get("client_id"), form.Get("client_secret")
	}
	switch form.Get("grant_type") {
	case "client_credentials":
		if clientID != f.client || secret != f.secret {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized_client", "error_description": "Invalid client or Invalid client credentials"})
			return
		}
		f.mu.Lock()
		f.issued++
		tok := fmt.Sprintf("admin-token-%d", f.issued)
		f.tokens[tok] = f.clock.now().Add(f.tokenLifetime)
		lifetime := int(f.tokenLifetime / time.Second)
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{
			"access_token": tok, "expires_in": lifetime, "refresh_expires_in": 0,
			"token_type": "Bearer", "not-before-policy": 0, "scope": "profile email",
		})
	case "password":
		f.mu.Lock()
		public := f.publicClients[clientID]
		var match bool
		for _, u := range f.users {
			if u.Username == strings.ToLower(form.Get("username")) && u.Password == form.Get("password") && u.Enabled {
				match = true
			}
		}
		f.mu.Unlock()
		switch {
		case !public:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized_client", "error_description": "Invalid client or Invalid client credentials"})
		case !match:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_grant", "error_description": "Invalid user credentials"})
		default:
			writeJSON(w, http.StatusOK, map[string]any{
				"access_token": "user-token-" + form.Get("username"), "expires_in": 300,
				"refresh_token": "refresh", "refresh_expires_in": 1800, "token_type": "Bearer", "scope": "openid profile",
			})
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Unsupported grant_type"})
	}
}

// admin checks what Keycloak's admin API checks before any handler: the
// realm and a valid bearer token.
func (f *fakeKeycloak) admin(next func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			f.t.Errorf("read body: %v", err)
		}
		f.record(r, string(body))
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		expiry, known := f.tokens[tok]
		fail := f.fail
		f.mu.Unlock()
		if !ok || !known || !f.clock.now().Before(expiry) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "HTTP 401 Unauthorized"})
			return
		}
		if r.PathValue("realm") != f.realm {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "Realm not found."})
			return
		}
		if fail != 0 {
			writeJSON(w, fail, map[string]string{"error": "unknown_error", "errorMessage": "failed on " + string(body)})
			return
		}
		next(w, r, body)
	}
}

type credentialRep struct {
	Type      string `json:"type"`
	Value     string `json:"value"`
	Temporary *bool  `json:"temporary"`
}

type userRep struct {
	ID              string              `json:"id,omitempty"`
	Username        string              `json:"username"`
	Enabled         *bool               `json:"enabled,omitempty"`
	RequiredActions []string            `json:"requiredActions,omitempty"`
	Credentials     []credentialRep     `json:"credentials,omitempty"`
	Attributes      map[string][]string `json:"attributes,omitempty"`
}

func (f *fakeKeycloak) createUser(w http.ResponseWriter, r *http.Request, body []byte) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "HTTP 415 Unsupported Media Type"})
		return
	}
	var rep userRep
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(&rep); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unknown_error"})
		return
	}
	if rep.Username == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": "User name is missing"})
		return
	}
	u := fakeUser{
		ID:              uuid.NewString(),
		Username:        strings.ToLower(rep.Username),
		Enabled:         rep.Enabled != nil && *rep.Enabled,
		RequiredActions: rep.RequiredActions,
		Attributes:      rep.Attributes,
	}
	for _, c := range rep.Credentials {
		if c.Type != "password" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": "unsupported credential type " + c.Type})
			return
		}
		if err := passwordPolicy(c.Value); err != "" {
			// Keycloak rolls the whole creation back on a policy failure.
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalidPasswordMessage", "errorMessage": err})
			return
		}
		u.Password, u.Temporary = c.Value, c.Temporary != nil && *c.Temporary
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, other := range f.users {
		if other.Username == u.Username {
			writeJSON(w, http.StatusConflict, map[string]string{"errorMessage": "User exists with same username"})
			return
		}
	}
	f.users[u.ID] = u
	if !f.noLocation {
		w.Header().Set("Location", f.srv.URL+"/admin/realms/"+f.realm+"/users/"+u.ID)
	}
	w.WriteHeader(http.StatusCreated)
}

// passwordPolicy is a typical realm policy: length(12) and upperCase,
// lowerCase, digits, specialChars (1 each) and notUsername.
func passwordPolicy(p string) string {
	count := func(pred func(rune) bool) int {
		n := 0
		for _, r := range p {
			if pred(r) {
				n++
			}
		}
		return n
	}
	switch {
	case len(p) < 12:
		return "Invalid password: minimum length 12."
	case count(func(r rune) bool { return r >= 'A' && r <= 'Z' }) < 1:
		return "Invalid password: must contain at least 1 upper case characters."
	case count(func(r rune) bool { return r >= 'a' && r <= 'z' }) < 1:
		return "Invalid password: must contain at least 1 lower case characters."
	case count(func(r rune) bool { return r >= '0' && r <= '9' }) < 1:
		return "Invalid password: must contain at least 1 numerical digits."
	case count(func(r rune) bool {
		return !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", r)
	}) < 1:
		return "Invalid password: must contain at least 1 special characters."
	}
	return ""
}

func (f *fakeKeycloak) listUsers(w http.ResponseWriter, r *http.Request, _ []byte) {
	q := r.URL.Query()
	username, exact := strings.ToLower(q.Get("username")), q.Get("exact") == "true"
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []userRep{}
	for _, u := range f.users {
		if (exact && u.Username == username) || (!exact && strings.Contains(u.Username, username)) {
			enabled := u.Enabled
			out = append(out, userRep{ID: u.ID, Username: u.Username, Enabled: &enabled, RequiredActions: u.RequiredActions, Attributes: u.Attributes})
		}
	}
	slices.SortFunc(out, func(a, b userRep) int { return strings.Compare(a.Username, b.Username) })
	writeJSON(w, http.StatusOK, out)
}

func (f *fakeKeycloak) getUser(w http.ResponseWriter, r *http.Request, _ []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[r.PathValue("id")]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "User not found"})
		return
	}
	writeJSON(w, http.StatusOK, userRep{ID: u.ID, Username: u.Username})
}

func (f *fakeKeycloak) deleteUser(w http.ResponseWriter, r *http.Request, _ []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.PathValue("id")
	if _, ok := f.users[id]; !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "User not found"})
		return
	}
	delete(f.users, id)
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeKeycloak) resetPassword(w http.ResponseWriter, r *http.Request, body []byte) {
	var c credentialRep
	if err := json.Unmarshal(body, &c); err != nil || c.Type != "password" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": "invalid credential"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[r.PathValue("id")]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "User not found"})
		return
	}
	u.Password, u.Temporary = c.Value, c.Temporary != nil && *c.Temporary
	f.users[u.ID] = u
	w.WriteHeader(http.StatusNoContent)
}

// createClient is POST /admin/realms/{realm}/clients: 201 with a Location
// header, 409 when the clientId is taken; a confidential client gets a
// generated secret, and service accounts a user of its own.
func (f *fakeKeycloak) createClient(w http.ResponseWriter, r *http.Request, body []byte) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "HTTP 415 Unsupported Media Type"})
		return
	}
	var rep clientRep
	if err := json.Unmarshal(body, &rep); err != nil || rep.ClientID == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": "invalid client representation"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.realmClients {
		if c.rep.ClientID == rep.ClientID {
			writeJSON(w, http.StatusConflict, map[string]string{"errorMessage": "Client " + rep.ClientID + " already exists"})
			return
		}
	}
	c := &fakeClient{rep: rep}
	c.rep.ID = uuid.NewString()
	for _, l := range []**[]string{&c.rep.RedirectURIs, &c.rep.WebOrigins} {
		if *l == nil { // Keycloak answers an empty list, never none
			*l = &[]string{}
		}
	}
	for i := range c.rep.ProtocolMappers {
		c.rep.ProtocolMappers[i].ID = uuid.NewString()
	}
	if rep.PublicClient == nil || !*rep.PublicClient {
		c.secret = uuid.NewString()
	}
	if rep.ServiceAccountsEnabled != nil && *rep.ServiceAccountsEnabled {
		u := fakeUser{ID: uuid.NewString(), Username: "service-account-" + strings.ToLower(rep.ClientID), Enabled: true}
		f.users[u.ID] = u
		c.serviceAccount = u.ID
	}
	f.realmClients[c.rep.ID] = c
	if !f.noLocation {
		w.Header().Set("Location", f.srv.URL+"/admin/realms/"+f.realm+"/clients/"+c.rep.ID)
	}
	w.WriteHeader(http.StatusCreated)
}

// listClients is GET /admin/realms/{realm}/clients?clientId=: an exact
// match unless search=true, with attributes and protocol mappers.
func (f *fakeKeycloak) listClients(w http.ResponseWriter, r *http.Request, _ []byte) {
	q := r.URL.Query()
	id, search := q.Get("clientId"), q.Get("search") == "true"
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []clientRep{}
	for _, c := range f.realmClients {
		if id == "" || c.rep.ClientID == id || (search && strings.Contains(c.rep.ClientID, id)) {
			out = append(out, c.rep)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// realmClient finds a client by Keycloak id, answering 404 as Keycloak does.
func (f *fakeKeycloak) realmClient(w http.ResponseWriter, r *http.Request) *fakeClient {
	c, ok := f.realmClients[r.PathValue("id")]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Could not find client"})
	}
	return c
}

// updateClient is PUT /admin/realms/{realm}/clients/{id}: 204; as
// Keycloak's RepresentationToModel.updateClient, the fields the
// representation carries replace the client's (an absent one is left as it
// is, an empty list clears), protocol mappers and the ids excepted; a
// clientId another client has is 409.
func (f *fakeKeycloak) updateClient(w http.ResponseWriter, r *http.Request, body []byte) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "HTTP 415 Unsupported Media Type"})
		return
	}
	var rep clientRep
	if err := json.Unmarshal(body, &rep); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": "invalid client representation"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.realmClient(w, r)
	if c == nil {
		return
	}
	if rep.ClientID != "" && rep.ClientID != c.rep.ClientID {
		for _, o := range f.realmClients {
			if o.rep.ClientID == rep.ClientID {
				writeJSON(w, http.StatusConflict, map[string]string{"errorMessage": "Client " + rep.ClientID + " already exists"})
				return
			}
		}
		c.rep.ClientID = rep.ClientID
	}
	set := func(dst **bool, src *bool) {
		if src != nil {
			*dst = src
		}
	}
	set(&c.rep.Enabled, rep.Enabled)
	set(&c.rep.PublicClient, rep.PublicClient)
	set(&c.rep.ServiceAccountsEnabled, rep.ServiceAccountsEnabled)
	set(&c.rep.StandardFlowEnabled, rep.StandardFlowEnabled)
	set(&c.rep.DirectAccessGrantsEnabled, rep.DirectAccessGrantsEnabled)
	if rep.RedirectURIs != nil {
		c.rep.RedirectURIs = rep.RedirectURIs
	}
	if rep.WebOrigins != nil {
		c.rep.WebOrigins = rep.WebOrigins
	}
	if rep.Attributes != nil {
		if c.rep.Attributes == nil {
			c.rep.Attributes = map[string]string{}
		}
		for k, v := range rep.Attributes { // Keycloak sets each attribute given
			c.rep.Attributes[k] = v
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeKeycloak) deleteClient(w http.ResponseWriter, r *http.Request, _ []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.realmClient(w, r)
	if c == nil {
		return
	}
	delete(f.users, c.serviceAccount)
	delete(f.realmClients, c.rep.ID)
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeKeycloak) clientSecret(w http.ResponseWriter, r *http.Request, _ []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.realmClient(w, r); c != nil {
		writeJSON(w, http.StatusOK, map[string]string{"type": "secret", "value": c.secret})
	}
}

// serviceAccountUser answers 400 for a client without service accounts, as Keycloak does.
func (f *fakeKeycloak) serviceAccountUser(w http.ResponseWriter, r *http.Request, _ []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.realmClient(w, r)
	if c == nil {
		return
	}
	u, ok := f.users[c.serviceAccount]
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Service account not enabled for the client '" + c.rep.ClientID + "'"})
		return
	}
	enabled := u.Enabled
	writeJSON(w, http.StatusOK, userRep{ID: u.ID, Username: u.Username, Enabled: &enabled})
}

// createMapper is POST .../clients/{id}/protocol-mappers/models: 409 when
// the client has a mapper of that name.
func (f *fakeKeycloak) createMapper(w http.ResponseWriter, r *http.Request, body []byte) {
	var m protocolMapperRep
	if err := json.Unmarshal(body, &m); err != nil || m.Name == "" || m.ProtocolMapper == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"errorMessage": "invalid protocol mapper"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.realmClient(w, r)
	if c == nil {
		return
	}
	if slices.ContainsFunc(c.rep.ProtocolMappers, func(x protocolMapperRep) bool { return x.Name == m.Name }) {
		writeJSON(w, http.StatusConflict, map[string]string{"errorMessage": "Protocol mapper exists with same name"})
		return
	}
	m.ID = uuid.NewString()
	c.rep.ProtocolMappers = append(c.rep.ProtocolMappers, m)
	w.Header().Set("Location", f.srv.URL+"/admin/realms/"+f.realm+"/clients/"+c.rep.ID+"/protocol-mappers/models/"+m.ID)
	w.WriteHeader(http.StatusCreated)
}

// clientByClientID is the client of clientID, or nil.
func (f *fakeKeycloak) clientByClientID(clientID string) *fakeClient {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.realmClients {
		if c.rep.ClientID == clientID {
			return c
		}
	}
	return nil
}
