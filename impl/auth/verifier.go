// Package auth verifies the bearer tokens of both releases and issues the
// development tokens of the embedded default.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
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
// not-before, and optionally its issuer.
type Verifier struct {
	keys     jwk.Set
	issuer   string
	audience string
}

// Principal is who a verified token speaks for.
type Principal struct {
	Subject string
	Issuer  string
}

// NewVerifier verifies against keys; issuer and audience, when not empty,
// must match iss and be one of aud.
func NewVerifier(keys jwk.Set, issuer, audience string) *Verifier {
	return &Verifier{keys: keys, issuer: issuer, audience: audience}
}

// Verify returns the token's principal, or an error wrapping ErrUnauthenticated.
func (v *Verifier) Verify(ctx context.Context, token string) (Principal, error) {
	opts := []jwt.ParseOption{
		jwt.WithContext(ctx),
		// The algorithm comes from the JWK, never from the token header; a key
		// without alg admits only the algorithms of its own key type, so an
		// HS256 token "signed" with an RSA public key never verifies.
		jwt.WithKeySet(v.keys, jws.WithInferAlgorithmFromKey(true), jws.WithRequireKid(false)),
		jwt.WithValidate(true),
		jwt.WithAcceptableSkew(Skew),
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
	return Principal{Subject: tok.Subject(), Issuer: tok.Issuer()}, nil
}

// LoadKeys opens the JWKS named by uri: an http(s) URL is fetched and kept
// fresh by a cache (refreshed at most every 15 minutes, and on the server's
// Cache-Control), anything else is read as a file. Symmetric keys are dropped:
// a JWKS is public, so an HMAC key in it could sign anything.
func LoadKeys(ctx context.Context, uri string, client *http.Client) (jwk.Set, error) {
	if strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://") {
		cache := jwk.NewCache(ctx)
		opts := []jwk.RegisterOption{
			jwk.WithMinRefreshInterval(15 * time.Minute),
			jwk.WithPostFetcher(jwk.PostFetchFunc(func(_ string, set jwk.Set) (jwk.Set, error) {
				return asymmetric(set)
			})),
		}
		if client != nil {
			opts = append(opts, jwk.WithHTTPClient(client))
		}
		if err := cache.Register(uri, opts...); err != nil {
			return nil, fmt.Errorf("jwks %s: %w", uri, err)
		}
		return jwk.NewCachedSet(cache, uri), nil
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
