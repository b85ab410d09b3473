package server_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/config"
)

const testIssuer = "https://issuer.test/realms/validators"

// idp is a stand-in identity provider: an RSA key and the JWKS that publishes it.
type idp struct {
	key    *rsa.PrivateKey
	jwks   []byte
	server *httptest.Server
}

func newIDP(t *testing.T, withAlg bool) *idp {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := jwk.FromRaw(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	_ = pub.Set(jwk.KeyIDKey, "k1")
	if withAlg {
		_ = pub.Set(jwk.AlgorithmKey, jwa.RS256)
	}
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	raw, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{key: key, jwks: raw}
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	}))
	t.Cleanup(p.server.Close)
	return p
}

type claims struct {
	iss      string
	aud      []string
	exp, nbf time.Time
	noExp    bool
}

func (p *idp) sign(t *testing.T, key *rsa.PrivateKey, c claims) string {
	t.Helper()
	b := jwt.NewBuilder().Subject("operator").Issuer(c.iss).IssuedAt(time.Now())
	if !c.noExp {
		b = b.Expiration(c.exp)
	}
	if !c.nbf.IsZero() {
		b = b.NotBefore(c.nbf)
	}
	if c.aud != nil {
		b = b.Audience(c.aud)
	}
	tok, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.FromRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	_ = priv.Set(jwk.KeyIDKey, "k1")
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256, priv))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

// hmacWithPublicKey is the algorithm-confusion attack: an HS256 token whose
// secret is the verifier's own public key.
func (p *idp) hmacWithPublicKey(t *testing.T) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&p.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	tok, _ := jwt.NewBuilder().Subject("operator").Issuer(testIssuer).Expiration(time.Now().Add(time.Hour)).Build()
	hk, err := jwk.FromRaw(secret)
	if err != nil {
		t.Fatal(err)
	}
	_ = hk.Set(jwk.KeyIDKey, "k1")
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256, hk))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

// unsigned is a token with "alg":"none" and no signature.
func unsigned(t *testing.T) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	header := enc([]byte(`{"alg":"none","kid":"k1","typ":"JWT"}`))
	payload := enc([]byte(`{"sub":"operator","iss":"` + testIssuer + `","exp":` + jsonTime(time.Now().Add(time.Hour)) + `}`))
	return header + "." + payload + "."
}

func jsonTime(t time.Time) string { b, _ := json.Marshal(t.Unix()); return string(b) }

func TestAuthentication(t *testing.T) {
	t.Parallel()
	p := newIDP(t, true)
	s := apitest.Start(t, apitest.Options{Config: func(c *config.Config) {
		c.JWKSURI = p.server.URL
		c.Issuer = testIssuer
	}})
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	valid := claims{iss: testIssuer, exp: now.Add(time.Hour)}

	cases := []struct {
		name   string
		header string
		admit  bool
	}{
		{"valid token", "Bearer " + p.sign(t, p.key, valid), true},
		{"expired within clock skew", "Bearer " + p.sign(t, p.key, claims{iss: testIssuer, exp: now.Add(-10 * time.Second)}), true},
		{"lower-case scheme", "bearer " + p.sign(t, p.key, valid), true},
		{"no token", "", false},
		{"empty bearer", "Bearer ", false},
		{"other scheme", "Basic b3BlcmF0b3I6c2VjcmV0", false},
		{"malformed", "Bearer not-a-jwt", false},
		{"three garbage segments", "Bearer a.b.c", false},
		{"signed by another key", "Bearer " + p.sign(t, other, valid), false},
		{"expired", "Bearer " + p.sign(t, p.key, claims{iss: testIssuer, exp: now.Add(-2 * time.Minute)}), false},
		{"not yet valid", "Bearer " + p.sign(t, p.key, claims{iss: testIssuer, exp: now.Add(time.Hour), nbf: now.Add(5 * time.Minute)}), false},
		{"no expiry", "Bearer " + p.sign(t, p.key, claims{iss: testIssuer, noExp: true}), false},
		{"alg none", "Bearer " + unsigned(t), false},
		{"HS256 signed with the public key", "Bearer " + p.hmacWithPublicKey(t), false},
		{"wrong issuer", "Bearer " + p.sign(t, p.key, claims{iss: "https://evil.test", exp: now.Add(time.Hour)}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("1.11", func(t *testing.T) {
				resp, body := send(t, s, http.MethodGet, "/api/validators", tc.header)
				if tc.admit {
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("got %d %s, want 200 from the handler", resp.StatusCode, body)
					}
					return
				}
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("got %d, want 401", resp.StatusCode)
				}
				var m map[string]string
				if err := json.Unmarshal(body, &m); err != nil || m["error"] == "" {
					t.Fatalf("got body %q, want a JSON object with an error", body)
				}
			})
			t.Run("2.0", func(t *testing.T) {
				resp, body := send(t, s, http.MethodGet, "/api/v1/validators", tc.header)
				if tc.admit {
					// Admitted: the handler answers.
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("got %d %s, want 200 from the handler", resp.StatusCode, body)
					}
					return
				}
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("got %d, want 401", resp.StatusCode)
				}
				if len(body) != 0 {
					t.Fatalf("got body %q, want empty", body)
				}
				if got := resp.Header.Get("WWW-Authenticate"); got != "Bearer" {
					t.Fatalf("got WWW-Authenticate %q, want Bearer", got)
				}
			})
		})
	}
	for _, secret := range []string{p.sign(t, p.key, valid), unsigned(t)} {
		if strings.Contains(s.Logs(), secret) {
			t.Fatal("a bearer token was written to the log")
		}
	}
}

// TestAudience: with api.auth.audience set, only tokens naming it are admitted
// (a wallet user's token of the same realm names its own client).
func TestAudience(t *testing.T) {
	t.Parallel()
	p := newIDP(t, true)
	s := apitest.Start(t, apitest.Options{Config: func(c *config.Config) {
		c.JWKSURI, c.Issuer, c.Audience = p.server.URL, testIssuer, "validator-manager"
	}})
	exp := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		aud  []string
		want int
	}{
		{[]string{"validator-manager"}, http.StatusOK},
		{[]string{"account", "validator-manager"}, http.StatusOK},
		{[]string{"acme-wallet-ui"}, http.StatusUnauthorized},
		{nil, http.StatusUnauthorized},
	} {
		token := p.sign(t, p.key, claims{iss: testIssuer, aud: tc.aud, exp: exp})
		if resp, body := send(t, s, http.MethodGet, "/api/validators", "Bearer "+token); resp.StatusCode != tc.want {
			t.Errorf("aud %v: got %d %s, want %d", tc.aud, resp.StatusCode, body, tc.want)
		}
	}
}

// TestJWKSSources: a JWKS file works like a URL, keys without alg admit only
// their own key type's algorithms, and a JWKS with no public key is refused.
func TestJWKSSources(t *testing.T) {
	t.Parallel()
	p := newIDP(t, false)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, p.jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	s := apitest.Start(t, apitest.Options{Config: func(c *config.Config) { c.JWKSURI = file }})
	token := p.sign(t, p.key, claims{iss: testIssuer, exp: time.Now().Add(time.Hour)})
	if resp, body := send(t, s, http.MethodGet, "/api/v1/validators", "Bearer "+token); resp.StatusCode != http.StatusOK {
		t.Fatalf("RS256 token against alg-less RSA key: got %d %s, want 200 from the handler", resp.StatusCode, body)
	}
	if resp, _ := send(t, s, http.MethodGet, "/api/v1/validators", "Bearer "+p.hmacWithPublicKey(t)); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HS256 against alg-less RSA key: got %d, want 401", resp.StatusCode)
	}
	if s.App.Issuer != nil {
		t.Fatal("development issuer is on although api.auth.jwksUri is set")
	}

	symmetric := filepath.Join(t.TempDir(), "oct.json")
	if err := os.WriteFile(symmetric, []byte(`{"keys":[{"kty":"oct","kid":"s","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir, cfg.JWKSURI = t.TempDir(), symmetric
	if _, err := openApp(t, cfg); err == nil || !strings.Contains(err.Error(), "no public signing key") {
		t.Fatalf("JWKS with only a symmetric key: got %v, want a refusal", err)
	}
}

// TestPublicPaths need no token; everything under /api and /api/v1 does.
func TestPublicPaths(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	for _, path := range []string{"/actuator/health", "/actuator/info", "/v3/api-docs", "/v3/api-docs/management", "/docs-ui.html"} {
		resp, body := send(t, s, http.MethodGet, path, "")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s without token: got %d %s, want 200", path, resp.StatusCode, body)
		}
	}
	resp, _ := send(t, s, http.MethodGet, "/api/ws/ledger-console?validator=v1", "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("console without token: got %d, want 401", resp.StatusCode)
	}
}

func send(t *testing.T, s *apitest.Server, method, path, authorization string) (*http.Response, []byte) {
	t.Helper()
	h := http.Header{}
	if authorization != "" {
		h.Set("Authorization", authorization)
	}
	return sendHeaders(t, s, method, path, h)
}

// sendHeaders sends a request without a body with the headers h.
func sendHeaders(t *testing.T, s *apitest.Server, method, path string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
