package sandbox_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// call sends method path to base with the bearer token and decodes the JSON answer.
func call(t *testing.T, method, base, path, token string, body io.Reader) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, base+path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	switch {
	case strings.HasSuffix(path, "/v2/dars"):
		req.Header.Set("Content-Type", "application/octet-stream")
	case body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

func grant(t *testing.T, tokenURL, id, secret string) (int, string) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {""}, "audience": {""}}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.AccessToken
}

// operatorLedger opens a network and answers its participant v1's ledger
// address and a token of the server's operator user for it.
func operatorLedger(t *testing.T) (ledgerURL, token string) {
	t.Helper()
	var tokens atomic.Int32
	n, _ := open(t, t.TempDir(), &tokens)
	tgt, err := n.Target("v1")
	if err != nil {
		t.Fatal(err)
	}
	_, tok := grant(t, tgt.Credentials.TokenURL, sandbox.ClientID, n.ClientSecret())
	return tgt.LedgerURL, tok
}

// TestLedgerEndpointsAsCantonAnswers: the endpoints Canton's clients call
// first answer JSON in the 3.5 shapes (the contract hook of open checks
// each answer against openapi/upstream/ledger-api.yaml).
func TestLedgerEndpointsAsCantonAnswers(t *testing.T) {
	L, tok := operatorLedger(t)

	st, v := call(t, http.MethodGet, L, "/v2/version", tok, nil)
	if st != http.StatusOK || !strings.HasPrefix(v["version"].(string), "3.5.") || v["features"].(map[string]any)["partyManagement"].(map[string]any)["maxPartiesPageSize"].(float64) != 100 {
		t.Fatalf("version: %d %v", st, v)
	}
	if st, _ := call(t, http.MethodGet, L, "/v2/version", "", nil); st != http.StatusUnauthorized {
		t.Fatalf("version without a token: %d, want 401", st)
	}

	_, pid := call(t, http.MethodGet, L, "/v2/parties/participant-id", tok, nil)
	_, ns, _ := strings.Cut(pid["participantId"].(string), "::")
	operator := "v1-validator-1::" + ns
	for _, tt := range []struct {
		path string
		want []string
	}{
		{"/v2/parties/" + url.PathEscape(operator), []string{operator}},
		{"/v2/parties/nobody::1220" + strings.Repeat("0", 64), nil},
	} {
		st, out := call(t, http.MethodGet, L, tt.path, tok, nil)
		var got []string
		for _, d := range out["partyDetails"].([]any) {
			got = append(got, d.(map[string]any)["party"].(string))
		}
		if st != http.StatusOK || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Fatalf("GET %s: %d %v, want %v", tt.path, st, out, tt.want)
		}
	}

	for _, hint := range []string{"alice", "alina", "bob"} {
		if st, out := call(t, http.MethodPost, L, "/v2/parties", tok, strings.NewReader(`{"partyIdHint":"`+hint+`"}`)); st != http.StatusOK {
			t.Fatalf("allocate %s: %d %v", hint, st, out)
		}
	}
	for _, tt := range []struct {
		query  string
		status int
		count  int
	}{
		{"?filter-party=ali", http.StatusOK, 2},
		{"?filter-party=bob::", http.StatusOK, 1},
		{"?filter-party=carol", http.StatusOK, 0},
		{"?pageSize=100", http.StatusOK, 4},
		{"?pageSize=101", http.StatusBadRequest, 0},
		{"?pageSize=-1", http.StatusBadRequest, 0},
	} {
		st, out := call(t, http.MethodGet, L, "/v2/parties"+tt.query, tok, nil)
		if st != tt.status {
			t.Fatalf("parties%s: %d %v, want %d", tt.query, st, out, tt.status)
		}
		if st == http.StatusOK && len(out["partyDetails"].([]any)) != tt.count {
			t.Fatalf("parties%s: %v, want %d", tt.query, out, tt.count)
		}
		if st == http.StatusBadRequest && out["code"] != "INVALID_ARGUMENT" {
			t.Fatalf("parties%s: %v, want INVALID_ARGUMENT", tt.query, out)
		}
	}
	if st, out := call(t, http.MethodGet, L, "/v2/users?pageSize=101", tok, nil); st != http.StatusBadRequest {
		t.Fatalf("users above the maximum page: %d %v, want 400", st, out)
	}

	for _, tt := range []struct {
		query, want string
	}{
		{"", "PARTICIPANT_PERMISSION_SUBMISSION"},
		{"?party=" + url.QueryEscape(operator), "PARTICIPANT_PERMISSION_SUBMISSION"},
		{"?party=nobody", ""},
	} {
		st, out := call(t, http.MethodGet, L, "/v2/state/connected-synchronizers"+tt.query, tok, nil)
		syncs := out["connectedSynchronizers"].([]any)
		switch {
		case st != http.StatusOK:
			t.Fatalf("connected synchronizers%s: %d", tt.query, st)
		case tt.want == "" && len(syncs) != 0:
			t.Fatalf("connected synchronizers%s: %v, want none", tt.query, syncs)
		case tt.want != "" && (len(syncs) != 1 || syncs[0].(map[string]any)["permission"] != tt.want):
			t.Fatalf("connected synchronizers%s: %v, want %s", tt.query, syncs, tt.want)
		}
	}
}

// TestNoCanActAsAnyParty: neither the 3.4 nor the 3.5 Ledger API defines
// the right (the request breaks the contract, so no contract hook here).
func TestNoCanActAsAnyParty(t *testing.T) {
	n, err := sandbox.Open(t.TempDir(), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, n)
	tgt, _ := n.Target("v1")
	_, tok := grant(t, tgt.Credentials.TokenURL, sandbox.ClientID, n.ClientSecret())
	st, out := call(t, http.MethodPost, tgt.LedgerURL, "/v2/users", tok, strings.NewReader(`{"user":{"id":"u1"},"rights":[{"kind":{"CanActAsAnyParty":{"value":{}}}}]}`))
	if st != http.StatusBadRequest || !strings.Contains(out["cause"].(string), "unknown right kind") {
		t.Fatalf("CanActAsAnyParty: %d %v, want 400", st, out)
	}
	if st, _ := call(t, http.MethodGet, tgt.LedgerURL, "/v2/users/u1", tok, nil); st != http.StatusNotFound {
		t.Fatalf("the user was created: %d", st)
	}
}

// TestUserUpdatesAsCantonAnswers: PATCH /v2/users/{user-id} refuses what
// Canton's UserManagementService refuses, with its codes: the requesting
// user deactivating itself (which would leave the participant without an
// admin), and a stale metadata.resourceVersion (concurrent change control).
// The refused updates change nothing.
func TestUserUpdatesAsCantonAnswers(t *testing.T) {
	L, tok := operatorLedger(t)
	const operator = "v1-validator-operator"
	if st, out := call(t, http.MethodPost, L, "/v2/users", tok, strings.NewReader(`{"user":{"id":"u1"}}`)); st != http.StatusOK {
		t.Fatalf("create u1: %d %v", st, out)
	}
	version := func(id string) string {
		t.Helper()
		_, out := call(t, http.MethodGet, L, "/v2/users/"+id, tok, nil)
		return out["user"].(map[string]any)["metadata"].(map[string]any)["resourceVersion"].(string)
	}
	stale := version("u1")
	if st, out := call(t, http.MethodPatch, L, "/v2/users/u1", tok, strings.NewReader(`{"user":{"id":"u1","metadata":{"annotations":{"a":"1"}}},"updateMask":{"paths":["metadata.annotations"],"unknownFields":{"fields":{}}}}`)); st != http.StatusOK {
		t.Fatalf("annotate u1: %d %v", st, out)
	}
	for _, tt := range []struct {
		name, user, body string
		status           int
		code, cause      string
	}{
		{"self-deactivation", operator, `{"user":{"id":"` + operator + `","isDeactivated":true},"updateMask":{"paths":["is_deactivated"],"unknownFields":{"fields":{}}}}`,
			http.StatusBadRequest, "INVALID_ARGUMENT", "Requesting user cannot self-deactivate"},
		{"stale resource version", "u1", `{"user":{"id":"u1","isDeactivated":true,"metadata":{"resourceVersion":"` + stale + `"}},"updateMask":{"paths":["is_deactivated"],"unknownFields":{"fields":{}}}}`,
			http.StatusConflict, "CONCURRENT_USER_UPDATE_DETECTED", "Update operation for user 'u1' failed due to a concurrent update to the same user"},
		{"resource version not a number", "u1", `{"user":{"id":"u1","isDeactivated":true,"metadata":{"resourceVersion":"abc"}},"updateMask":{"paths":["is_deactivated"],"unknownFields":{"fields":{}}}}`,
			http.StatusBadRequest, "INVALID_FIELD", "Invalid field user.metadata.resource_version: Invalid resource version number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := version(tt.user)
			st, out := call(t, http.MethodPatch, L, "/v2/users/"+tt.user, tok, strings.NewReader(tt.body))
			if st != tt.status || out["code"] != tt.code || !strings.Contains(out["cause"].(string), tt.cause) {
				t.Fatalf("%d %v, want %d %s %q", st, out, tt.status, tt.code, tt.cause)
			}
			st, out = call(t, http.MethodGet, L, "/v2/users/"+tt.user, tok, nil)
			if u := out["user"].(map[string]any); st != http.StatusOK || u["isDeactivated"] != false || version(tt.user) != before {
				t.Fatalf("the refused update changed the user: %d %v", st, out)
			}
		})
	}
	// The current resource version is accepted, and the operator may
	// deactivate another user.
	body := `{"user":{"id":"u1","isDeactivated":true,"metadata":{"resourceVersion":"` + version("u1") + `"}},"updateMask":{"paths":["is_deactivated"],"unknownFields":{"fields":{}}}}`
	if st, out := call(t, http.MethodPatch, L, "/v2/users/u1", tok, strings.NewReader(body)); st != http.StatusOK || out["user"].(map[string]any)["isDeactivated"] != true {
		t.Fatalf("deactivate u1: %d %v", st, out)
	}
	if st, out := call(t, http.MethodGet, L, "/v2/authenticated-user", tok, nil); st != http.StatusOK {
		t.Fatalf("the operator after the refused self-deactivation: %d %v", st, out)
	}
}

// secrets holds validators' ledger API client secrets.
type secrets map[string]string

func (s secrets) LedgerAPIClientSecret(_ context.Context, v string) (string, error) {
	if x, ok := s[v]; ok {
		return x, nil
	}
	return "", domain.NotFound("no secret")
}

// configured knows v1 with a configured ledger API client and v2 without.
type configured struct{}

func (configured) GetValidator(_ context.Context, name string) (domain.Validator, error) {
	cfg := `{}`
	if name == "v1" {
		cfg = `{"auth":{"ledgerApiClientId":"v1-ledger-client","audience":"https://ledger.example"}}`
	}
	return domain.Validator{Name: name, Spec: []byte(cfg)}, nil
}

// TestTokens: the token endpoint is an OIDC provider issuing signed JWTs;
// a validator's configured client and secret are what is checked, and
// the ledger answers authenticated-user with the token's user.
func TestTokens(t *testing.T) {
	n, err := sandbox.Open(t.TempDir(), sandbox.Options{Secrets: secrets{"v1": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, n)
	r := n.Resolver(configured{})
	t1, err := r.Resolve(t.Context(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	if c := t1.Credentials; c.ClientID != "v1-ledger-client" || c.ClientSecret != "s3cret" || c.Audience != "https://ledger.example" {
		t.Fatalf("v1's credentials: %+v, want its configured client", c)
	}
	t2, _ := r.Resolve(t.Context(), "v2")
	if t2.Credentials.ClientID != sandbox.ClientID {
		t.Fatalf("v2's credentials: %+v, want the sandbox's own", t2.Credentials)
	}

	base := strings.TrimSuffix(t1.Credentials.TokenURL, "/oauth2/token")
	st, disc := call(t, http.MethodGet, base, "/.well-known/openid-configuration", "", nil)
	if st != http.StatusOK || disc["token_endpoint"] != t1.Credentials.TokenURL || disc["issuer"] != base {
		t.Fatalf("discovery: %d %v", st, disc)
	}
	_, jwks := call(t, http.MethodGet, base, strings.TrimPrefix(disc["jwks_uri"].(string), base), "", nil)
	jwk := jwks["keys"].([]any)[0].(map[string]any)
	coord := func(s any) *big.Int {
		b, _ := base64.RawURLEncoding.DecodeString(s.(string))
		return new(big.Int).SetBytes(b)
	}
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: coord(jwk["x"]), Y: coord(jwk["y"])}

	for _, tt := range []struct {
		name, id, secret string
		status           int
	}{
		{"wrong secret", "v1-ledger-client", "nope", http.StatusUnauthorized},
		{"unknown client", "someone", "s3cret", http.StatusUnauthorized},
		{"the sandbox's own secret for v1's client", "v1-ledger-client", n.ClientSecret(), http.StatusUnauthorized},
	} {
		if st, _ := grant(t, t1.Credentials.TokenURL, tt.id, tt.secret); st != tt.status {
			t.Fatalf("%s: %d, want %d", tt.name, st, tt.status)
		}
	}
	st, tok := grant(t, t1.Credentials.TokenURL, "v1-ledger-client", "s3cret")
	parts := strings.Split(tok, ".")
	if st != http.StatusOK || len(parts) != 3 {
		t.Fatalf("grant: %d %q, want a JWT", st, tok)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, d[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the token does not verify with the JWKS key")
	}
	rawClaims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(rawClaims, &claims)
	if claims["sub"] != "v1-ledger-client" || claims["exp"] == nil || claims["iss"] != base {
		t.Fatalf("claims: %v", claims)
	}

	// At v1 the configured client is the operator; at v2 it is nobody.
	st, u := call(t, http.MethodGet, t1.LedgerURL, "/v2/authenticated-user", tok, nil)
	if st != http.StatusOK || u["user"].(map[string]any)["id"] != "v1-validator-operator" {
		t.Fatalf("authenticated-user at v1: %d %v", st, u)
	}
	if st, out := call(t, http.MethodGet, t2.LedgerURL, "/v2/authenticated-user", tok, nil); st != http.StatusForbidden {
		t.Fatalf("v1's client at v2: %d %v, want 403", st, out)
	}
	if st, _ := call(t, http.MethodGet, t1.LedgerURL, "/v2/authenticated-user", tok[:len(tok)-4]+"AAAA", nil); st != http.StatusUnauthorized {
		t.Fatalf("a tampered token: %d, want 401", st)
	}

	// A ledger user of its own: a client whose id is a user of the node.
	_, own := grant(t, t2.Credentials.TokenURL, sandbox.ClientID, n.ClientSecret())
	if st, out := call(t, http.MethodPost, t2.LedgerURL, "/v2/users", own, strings.NewReader(`{"user":{"id":"v1-ledger-client"}}`)); st != http.StatusOK {
		t.Fatalf("create user: %d %v", st, out)
	}
	if st, u := call(t, http.MethodGet, t2.LedgerURL, "/v2/authenticated-user", tok, nil); st != http.StatusOK || u["user"].(map[string]any)["id"] != "v1-ledger-client" {
		t.Fatalf("authenticated-user at v2: %d %v, want the user v1-ledger-client", st, u)
	}
}

// TestDarPackageIDs: a DALF's package id is the SHA-256 of its Daml-LF
// archive's payload; a DALF that is not such an archive fails the upload.
func TestDarPackageIDs(t *testing.T) {
	var tokens atomic.Int32
	n, _ := open(t, t.TempDir(), &tokens)
	tgt, _ := n.Target("v1")
	_, tok := grant(t, tgt.Credentials.TokenURL, sandbox.ClientID, n.ClientSecret())
	mkdar := func(dalf []byte) *bytes.Reader {
		var buf bytes.Buffer
		z := zip.NewWriter(&buf)
		w, _ := z.Create("m-1.0.0/m.dalf")
		_, _ = w.Write(dalf)
		w, _ = z.Create("META-INF/MANIFEST.MF")
		_, _ = w.Write([]byte("Manifest-Version: 1.0\r\nMain-Dalf: m-1.0.0/m.dalf\r\nDalfs: m-1.0.0/m.dalf\r\nFormat: daml-lf\r\n"))
		_ = z.Close()
		return bytes.NewReader(buf.Bytes())
	}
	good := apitest.Archive("2.1", []byte("a package"))
	tampered := bytes.Clone(good)
	tampered[len(tampered)-1] ^= 1 // the hash no longer matches
	for _, tt := range []struct {
		name   string
		dalf   []byte
		status int
	}{
		{"junk", []byte("not a dalf"), http.StatusBadRequest},
		{"empty", nil, http.StatusBadRequest},
		{"hash not the payload's", tampered, http.StatusBadRequest},
		{"an archive", good, http.StatusOK},
	} {
		st, out := call(t, http.MethodPost, tgt.LedgerURL, "/v2/dars", tok, mkdar(tt.dalf))
		if st != tt.status || (st == http.StatusBadRequest && out["code"] != "DAR_PARSE_ERROR") {
			t.Fatalf("%s: %d %v, want %d", tt.name, st, out, tt.status)
		}
	}
	// The id Daml-LF gives: SHA-256 of the payload, which the archive names.
	var payload []byte
	for b := good; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if num == 3 {
			payload, _ = protowire.ConsumeBytes(b)
		}
		b = b[m:]
	}
	sum := sha256.Sum256(payload)
	wantID := hex.EncodeToString(sum[:])
	_, pk := call(t, http.MethodGet, tgt.LedgerURL, "/v2/packages", tok, nil)
	found := false
	for _, id := range pk["packageIds"].([]any) {
		found = found || id == wantID
	}
	if !found {
		t.Fatalf("packages %v lack %s", pk["packageIds"], wantID)
	}
}
