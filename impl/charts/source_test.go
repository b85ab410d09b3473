package charts_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/charts/chartstest"
)

func newSource(t *testing.T) (*charts.Source, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "charts")
	s, err := charts.NewSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// A chart pulled once is verified, written to the cache by digest, and
// served from there afterwards: by the same Source and by a new one over
// the same directory, with the registry stopped.
func TestSourcePullVerifyCache(t *testing.T) {
	reg := chartstest.NewRegistry(t)
	reg.Push(t, chartstest.V1)
	s, dir := newSource(t)
	ref := charts.Reference(reg.Repository, "splice-validator")

	if _, ok := s.Cached(ref, chartstest.V1); ok {
		t.Fatal("cached before any pull")
	}
	got, err := s.Get(ref, chartstest.V1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "splice-validator" || got.Version != chartstest.V1 || got.Reference != ref ||
		!strings.HasPrefix(got.Digest, "sha256:") || got.Chart.Metadata.Version != chartstest.V1 {
		t.Fatalf("pulled %+v", got)
	}
	file := filepath.Join(dir, "sha256", strings.TrimPrefix(got.Digest, "sha256:")+".tgz")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("chart not cached by digest: %v", err)
	}

	reg.Server.Close()
	for _, src := range []*charts.Source{s, mustSource(t, dir)} {
		again, err := src.Get(ref, chartstest.V1)
		if err != nil {
			t.Fatalf("second pull with the registry stopped: %v", err)
		}
		if again.Digest != got.Digest {
			t.Fatalf("digest %s, first pulled %s", again.Digest, got.Digest)
		}
		if _, ok := src.Cached(ref, chartstest.V1); !ok {
			t.Fatal("not cached")
		}
	}

	// A cached archive altered on disk is not served.
	if err := os.WriteFile(file, []byte("altered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustSource(t, dir).Cached(ref, chartstest.V1); ok {
		t.Fatal("an altered cache file was served")
	}
}

// A version re-tagged in the registry keeps the digest first resolved.
func TestSourceRetagKeepsFirstDigest(t *testing.T) {
	reg := chartstest.NewRegistry(t)
	reg.Push(t, chartstest.V1)
	s, _ := newSource(t)
	ref := charts.Reference(reg.Repository, "splice-participant")
	first, err := s.Get(ref, chartstest.V1)
	if err != nil {
		t.Fatal(err)
	}
	// Push again: the archive's timestamps differ, hence the digest.
	reg.Push(t, chartstest.V1)
	again, err := s.Get(ref, chartstest.V1)
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != first.Digest {
		t.Fatalf("re-tag followed: %s, first %s", again.Digest, first.Digest)
	}
}

// Concurrent requests for one chart pull it once.
func TestSourceConcurrentGetPullsOnce(t *testing.T) {
	var resolves atomic.Int64
	reg := chartstest.NewRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/manifests/"+chartstest.V1) {
				resolves.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	})
	reg.Push(t, chartstest.V1)
	resolves.Store(0)
	s, _ := newSource(t)
	ref := charts.Reference(reg.Repository, "splice-validator")
	var wg sync.WaitGroup
	digests := make([]string, 8)
	for i := range digests {
		wg.Go(func() {
			c, err := s.Get(ref, chartstest.V1)
			if err != nil {
				t.Error(err)
				return
			}
			digests[i] = c.Digest
		})
	}
	wg.Wait()
	if n := resolves.Load(); n != 1 {
		t.Fatalf("%d resolves of the tag, want 1", n)
	}
	if digests[0] == "" || slices.ContainsFunc(digests, func(d string) bool { return d != digests[0] }) {
		t.Fatalf("digests %v", digests)
	}
}

func mustSource(t *testing.T, dir string) *charts.Source {
	t.Helper()
	s, err := charts.NewSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rewrite serves the requests match selects with their body edited (and
// the headers drop names left out).
func rewrite(next http.Handler, match func(*http.Request) bool, edit func([]byte) []byte, drop ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !match(r) {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if !slices.Contains(drop, k) {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(edit(rec.Body.Bytes()))
	})
}

// alterBlobs serves every blob but the chart's config with a byte
// changed: what the registry serves no longer matches its digests.
func alterBlobs(next http.Handler) http.Handler {
	return rewrite(next, func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/blobs/") },
		func(body []byte) []byte {
			if len(body) > 0 && !bytes.HasPrefix(body, []byte("{")) {
				body[len(body)/2] ^= 0xff
			}
			return body
		})
}

// alterManifests serves manifests fetched by digest with a field added.
func alterManifests(next http.Handler) http.Handler {
	return rewrite(next, func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/manifests/sha256:") },
		func(body []byte) []byte {
			return bytes.Replace(body, []byte("{"), []byte(`{"annotations":{"x":"y"},`), 1)
		}, "Content-Length", "Docker-Content-Digest")
}

func TestSourceFailures(t *testing.T) {
	tests := []struct {
		name    string
		alter   func(http.Handler) http.Handler
		version string
		stop    bool
		cause   charts.PullCause
	}{
		{name: "unknown version", version: "0.0.42", cause: charts.NotFound},
		{name: "altered chart archive", alter: alterBlobs, version: chartstest.V1, cause: charts.DigestMismatch},
		{name: "altered manifest", alter: alterManifests, version: chartstest.V1, cause: charts.DigestMismatch},
		{name: "registry gone", version: chartstest.V1, stop: true, cause: charts.Unreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The registry alters what it serves once the charts are pushed.
			var altering atomic.Bool
			reg := chartstest.NewRegistry(t, func(next http.Handler) http.Handler {
				if tt.alter == nil {
					return next
				}
				altered := tt.alter(next)
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if altering.Load() {
						altered.ServeHTTP(w, r)
						return
					}
					next.ServeHTTP(w, r)
				})
			})
			reg.Push(t, chartstest.V1)
			altering.Store(true)
			if tt.stop {
				reg.Server.Close()
			}
			s, dir := newSource(t)
			ref := charts.Reference(reg.Repository, "splice-validator")
			_, err := s.Get(ref, tt.version)
			var pe *charts.PullError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *PullError", err, err)
			}
			if pe.Cause != tt.cause || pe.Reference != ref || pe.Version != tt.version {
				t.Fatalf("error %+v, want cause %q", pe, tt.cause)
			}
			if msg := err.Error(); !strings.Contains(msg, ref+":"+tt.version) || !strings.Contains(msg, string(tt.cause)) {
				t.Fatalf("message %q names neither the reference nor the cause", msg)
			}
			if _, ok := s.Cached(ref, tt.version); ok {
				t.Fatal("a failed pull was cached")
			}
			if files, _ := os.ReadDir(filepath.Join(dir, "sha256")); len(files) != 0 {
				t.Fatalf("cache holds %d files after a failed pull", len(files))
			}
		})
	}
}
