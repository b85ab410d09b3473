// Package auth verifies the bearer tokens of both releases and issues the
// development tokens of the embedded default.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

// Skew is the clock difference tolerated on exp, nbf and iat.
const Skew = 30 * time.Second

// ErrUnauthenticated wraps every reason a token is refused.
var ErrUnauthenticated = errors.New("unauthenticated")

// Verifier checks a bearer token's signature against a JWKS, its expiry and
// not-before, and optionally its issuer. A token that verified is
// remembered (see tokenCache) until its exp, so that a client repeating its
// token costs a hash and a map lookup instead of an RSA verification.
type Verifier struct {
	keys     jwk.Set
	issuer   string
	audience string
	cache    *tokenCache
	now      func() time.Time
	roles    *Roles
}

// Principal is who a verified token speaks for.
type Principal struct {
	Subject string
	Issuer  string
	// Role is what the token's claims map to under the verifier's Roles;
	// RoleNone when roles are off.
	Role Role
	// Expires is when the server stops accepting the token: its exp plus
	// the clock skew tolerated (Skew). A watch stream opened with it ends then.
	Expires time.Time
}

// NewVerifier verifies against keys; issuer and audience, when not empty,
// must match iss and be one of aud.
func NewVerifier(keys jwk.Set, issuer, audience string) *Verifier {
	return &Verifier{keys: keys, issuer: issuer, audience: audience, cache: newTokenCache(cachedTokens), now: time.Now}
}

// WithRoles makes v resolve each token's role (Principal.Role) with r; nil:
// roles off. Call it before the first Verify.
func (v *Verifier) WithRoles(r *Roles) *Verifier {
	v.roles = r
	return v
}

// RolesOn tells whether v resolves roles (api.auth.roles is set).
func (v *Verifier) RolesOn() bool { return v != nil && v.roles != nil }

// Verify returns the token's principal, or an error wrapping ErrUnauthenticated.
func (v *Verifier) Verify(ctx context.Context, token string) (Principal, error) {
	gen := generation(v.keys)
	key := sha256.Sum256([]byte(token))
	now := v.now()
	if p, ok := v.cache.get(key, gen, now); ok {
		return p, nil
	}
	opts := []jwt.ParseOption{
		jwt.WithContext(ctx),
		// The algorithm comes from the JWK, never from the token header; a key
		// without alg admits only the algorithms of its own key type, so an
		// HS256 token "signed" with an RSA public key never verifies.
		jwt.WithKeySet(v.keys, jws.WithInferAlgorithmFromKey(true), jws.WithRequireKid(false)),
		jwt.WithValidate(true),
		jwt.WithAcceptableSkew(Skew),
		jwt.WithClock(jwt.ClockFunc(v.now)),
	}
	if v.issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.issuer))
	}
	if v.audience != "" {
		opts = append(opts, jwt.WithAudience(v.audience))
	}
	tok, err := jwt.ParseString(token, opts...)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	if tok.Expiration().IsZero() {
		return Principal{}, fmt.Errorf("%w: token has no exp claim", ErrUnauthenticated)
	}
	p := Principal{Subject: tok.Subject(), Issuer: tok.Issuer(), Role: v.roles.Of(tok), Expires: tok.Expiration().Add(Skew)}
	v.cache.put(key, cached{principal: p, exp: tok.Expiration(), gen: gen}, now)
	return p, nil
}

// LoadKeys opens the JWKS named by uri: an http(s) URL is fetched and kept
// fresh by a cache (refreshed at most every 15 minutes, and on the server's
// Cache-Control), anything else is read as a file. Symmetric keys are dropped:
// a JWKS is public, so an HMAC key in it could sign anything.
func LoadKeys(ctx context.Context, uri string, client *http.Client) (jwk.Set, error) {
	if strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://") {
		cache := jwk.NewCache(ctx)
		rs := &rotatingSet{cache: cache, uri: uri}
		opts := []jwk.RegisterOption{
			jwk.WithMinRefreshInterval(15 * time.Minute),
			jwk.WithPostFetcher(jwk.PostFetchFunc(func(_ string, set jwk.Set) (jwk.Set, error) {
				out, err := asymmetric(set)
				if err == nil {
					rs.fetched(out)
				}
				return out, err
			})),
		}
		if client != nil {
			opts = append(opts, jwk.WithHTTPClient(client))
		}
		if err := cache.Register(uri, opts...); err != nil {
			return nil, fmt.Errorf("jwks %s: %w", uri, err)
		}
		rs.keySet = jwk.NewCachedSet(cache, uri)
		return rs, nil
	}
	raw, err := os.ReadFile(uri)
	if err != nil {
		return nil, fmt.Errorf("jwks file: %w", err)
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("jwks file %s: %w", uri, err)
	}
	return asymmetric(set)
}

func asymmetric(set jwk.Set) (jwk.Set, error) {
	out := jwk.NewSet()
	for i := 0; i < set.Len(); i++ {
		k, _ := set.Key(i)
		if k.KeyType() == jwa.OctetSeq {
			continue
		}
		if err := out.AddKey(k); err != nil {
			return nil, err
		}
	}
	if out.Len() == 0 {
		return nil, errors.New("jwks holds no public signing key")
	}
	return out, nil
}

// rotatingSet is a JWKS kept fresh from a URL that counts its rotations:
// every fetch whose keys differ from the last one's starts a new generation,
// and tokens verified under an older generation are verified again.
type rotatingSet struct {
	keySet
	cache *jwk.Cache
	uri   string
	gen   atomic.Uint64
	mu    sync.Mutex
	last  [32]byte
}

// keySet names the embedded set (jwk.Set has a method called Set).
type keySet = jwk.Set

func (r *rotatingSet) fetched(set jwk.Set) {
	raw, err := json.Marshal(set)
	sum := sha256.Sum256(raw)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || sum != r.last {
		r.last = sum
		r.gen.Add(1)
	}
}

// generation is the keys' rotation count; 0 for a set that never rotates.
func generation(set jwk.Set) uint64 {
	if r, ok := set.(*rotatingSet); ok {
		return r.gen.Load()
	}
	return 0
}

// cachedTokens bounds the verified-token cache: a token is about 1 KB and
// an entry about 100 bytes, so the bound keeps it under a few megabytes
// whatever the clients send.
const cachedTokens = 10000

type cached struct {
	principal Principal
	exp       time.Time
	gen       uint64
}

// tokenCache remembers verified tokens by the SHA-256 of the token (the
// token itself is never kept). An entry is dropped at the token's exp (the
// clock skew is not extended to cached tokens: past exp, a token is
// verified again, by the same rules), when the JWKS rotates, and, when the
// cache is full, expired entries first, then any.
type tokenCache struct {
	mu  sync.RWMutex
	m   map[[32]byte]cached
	max int
	gen uint64
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{m: make(map[[32]byte]cached), max: max}
}

func (c *tokenCache) get(key [32]byte, gen uint64, now time.Time) (Principal, bool) {
	c.mu.RLock()
	e, ok := c.m[key]
	c.mu.RUnlock()
	if ok && e.gen == gen && now.Before(e.exp) {
		return e.principal, true
	}
	if ok {
		c.mu.Lock()
		delete(c.m, key)
		c.mu.Unlock()
	}
	return Principal{}, false
}

func (c *tokenCache) put(key [32]byte, e cached, now time.Time) {
	if !now.Before(e.exp) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.gen != c.gen {
		// The keys rotated: what was verified under the old ones goes.
		clear(c.m)
		c.gen = e.gen
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k, old := range c.m {
			if !now.Before(old.exp) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = e
}
