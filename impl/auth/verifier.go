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
	"k8s.io/apimachinery/pkg/util/cache"
)

// Skew is the clock difference tolerated on exp, nbf and iat.
const Skew = 30 * time.Second

// ErrUnauthenticated wraps every reason a token is refused.
var ErrUnauthenticated = errors.New("unauthenticated")

// Verifier checks a bearer token's signature against a JWKS, its expiry and
// not-before, and optionally its issuer and audience; a verified token is
// remembered, so that a repeated one costs no RSA verification.
type Verifier struct {
	keys     jwk.Set
	issuer   string
	audience string
	cache    *cache.LRUExpireCache
	cacheGen atomic.Uint64
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
	v := &Verifier{keys: keys, issuer: issuer, audience: audience, now: time.Now}
	v.cache = cache.NewLRUExpireCacheWithClock(cachedTokens, verifierClock{v})
	return v
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
	if e, ok := v.cache.Get(key); ok && e.(cached).gen == gen {
		return e.(cached).principal, nil
	}
	opts := []jwt.ParseOption{
		jwt.WithContext(ctx),
		// The algorithm comes from the JWK, never from the token header; a key
		// without alg admits only its own key type's, so an HS256 token
		// "signed" with an RSA public key never verifies.
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
	v.remember(key, cached{principal: p, gen: gen}, tok.Expiration())
	return p, nil
}

// LoadKeys opens the JWKS named by uri: an http(s) URL is fetched and kept
// fresh, anything else is read as a file. Symmetric keys are dropped: a JWKS
// is public, so an HMAC key in it could sign anything.
func LoadKeys(ctx context.Context, uri string, client *http.Client) (jwk.Set, error) {
	if strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://") {
		cache := jwk.NewCache(ctx)
		rs := &rotatingSet{cache: cache}
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

// rotatingSet is a JWKS kept fresh from a URL that counts its rotations, so
// that tokens verified under older keys are verified again.
type rotatingSet struct {
	keySet
	cache *jwk.Cache // refreshed by the tests
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

// cachedTokens bounds the verified-token cache to a few megabytes whatever the
// clients send (an entry is about 100 bytes).
const cachedTokens = 10000

// cached is a verified token's principal and the JWKS generation it was
// verified under.
type cached struct {
	principal Principal
	gen       uint64
}

// remember caches a verified token by its SHA-256 until its exp (not exp plus
// the skew: past exp it is verified again, by the same rules). When the JWKS
// rotates, what was verified under the old keys goes.
func (v *Verifier) remember(key [32]byte, e cached, exp time.Time) {
	ttl := exp.Sub(v.now())
	if ttl <= 0 {
		return
	}
	if v.cacheGen.Swap(e.gen) != e.gen {
		v.cache.RemoveAll(func(any) bool { return true })
	}
	v.cache.Add(key, e, ttl)
}

// verifierClock is the cache's clock: the verifier's.
type verifierClock struct{ v *Verifier }

func (c verifierClock) Now() time.Time { return c.v.now() }
