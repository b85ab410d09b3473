package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"k8s.io/apimachinery/pkg/util/cache"
)

func devIssuer(t *testing.T) *DevIssuer {
	t.Helper()
	d, err := OpenDevIssuer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func issue(t *testing.T, d *DevIssuer, subject string, ttl time.Duration) string {
	t.Helper()
	tok, err := d.Issue(subject, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestCacheHit: a token verified once is answered from the cache, even when
// the keys are no longer consulted (here: replaced by keys that would refuse it).
func TestCacheHit(t *testing.T) {
	d := devIssuer(t)
	v := NewVerifier(d.PublicKeys(), DevIssuerName, "")
	tok := issue(t, d, "alice", time.Hour)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("first verify: got %v, want none", err)
	}
	v.keys = devIssuer(t).PublicKeys()
	p, err := v.Verify(context.Background(), tok)
	if err != nil || p.Subject != "alice" {
		t.Fatalf("second verify: got %+v, %v; want alice from the cache", p, err)
	}
	if _, ok := v.cache.Get(sha256.Sum256([]byte(tok))); !ok || len(v.cache.Keys()) != 1 {
		t.Fatalf("got %d entries, want the token's hash only", len(v.cache.Keys()))
	}
	// A token that fails is not cached.
	if _, err := v.Verify(context.Background(), issue(t, d, "bob", time.Hour)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("token of the replaced keys: got %v, want ErrUnauthenticated", err)
	}
	if len(v.cache.Keys()) != 1 {
		t.Fatalf("got %d entries after a refused token, want 1", len(v.cache.Keys()))
	}
}

// TestCacheExpiry: at exp the entry is gone and the token is verified
// again, by the full rules.
func TestCacheExpiry(t *testing.T) {
	d := devIssuer(t)
	v := NewVerifier(d.PublicKeys(), DevIssuerName, "")
	now := time.Now()
	v.now = func() time.Time { return now }
	tok := issue(t, d, "alice", time.Minute)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	// Past exp but within the skew the full verification accepts it, so
	// the refusal below can only come from a fresh verification.
	now = now.Add(time.Minute + time.Second)
	v.keys = devIssuer(t).PublicKeys()
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("after exp: got %v, want the token verified again (and refused by the replaced keys)", err)
	}
	if len(v.cache.Keys()) != 0 {
		t.Fatalf("got %d entries after exp, want 0", len(v.cache.Keys()))
	}
}

// TestCacheRotation: when the JWKS behind a URL changes, tokens verified
// under the old keys are verified again; a token of a removed key is refused.
func TestCacheRotation(t *testing.T) {
	oldKeys, newKeys := devIssuer(t), devIssuer(t)
	var serving atomic.Pointer[DevIssuer]
	serving.Store(oldKeys)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(serving.Load().PublicKeys())
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys, err := LoadKeys(ctx, srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(keys, DevIssuerName, "")
	tok := issue(t, oldKeys, "alice", time.Hour)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("before rotation: got %v, want none", err)
	}
	if _, err := v.Verify(ctx, tok); err != nil || len(v.cache.Keys()) != 1 {
		t.Fatalf("before rotation, again: got %v with %d entries, want a cache hit", err, len(v.cache.Keys()))
	}

	// The same keys fetched again are no rotation.
	rs := keys.(*rotatingSet)
	gen := rs.gen.Load()
	if _, err := rs.cache.Refresh(ctx, srv.URL); err != nil {
		t.Fatal(err)
	}
	if rs.gen.Load() != gen {
		t.Fatal("a refresh with the same keys started a new generation")
	}

	serving.Store(newKeys)
	if _, err := rs.cache.Refresh(ctx, srv.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("token of a rotated-out key: got %v, want ErrUnauthenticated", err)
	}
	if _, err := v.Verify(ctx, issue(t, newKeys, "bob", time.Hour)); err != nil {
		t.Fatalf("token of the new key: got %v, want none", err)
	}
	if _, ok := v.cache.Get(sha256.Sum256([]byte(tok))); ok || len(v.cache.Keys()) != 1 {
		t.Fatalf("after rotation: got %d entries (old token kept: %v), want the new token's only", len(v.cache.Keys()), ok)
	}
}

// TestCacheBound: the cache never holds more than its bound.
func TestCacheBound(t *testing.T) {
	d := devIssuer(t)
	v := NewVerifier(d.PublicKeys(), DevIssuerName, "")
	v.cache = cache.NewLRUExpireCacheWithClock(3, verifierClock{v})
	for range 5 {
		if _, err := v.Verify(context.Background(), issue(t, d, "alice", time.Hour)); err != nil {
			t.Fatal(err)
		}
		if len(v.cache.Keys()) > 3 {
			t.Fatalf("got %d entries, want at most 3", len(v.cache.Keys()))
		}
	}
}

var _ jwk.Set = (*rotatingSet)(nil)
