// Package charts provisions a validator from Splice's published Helm charts
// (chart mode): it pulls and caches them (Source), derives their values
// (Values) and renders them (Render) for the workload controller (Renderer).
package charts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
)

// PullCause is why a chart could not be pulled.
type PullCause string

const (
	NotFound PullCause = "not found in the registry"
	// Unreachable: DNS, connection, TLS, timeout.
	Unreachable PullCause = "registry unreachable"
	// DigestMismatch: what was served is not what its digest names.
	DigestMismatch PullCause = "digest mismatch"
	// Invalid: not the chart asked for, or an error status but not found.
	Invalid PullCause = "invalid chart"
)

// PullError is a chart that could not be pulled.
type PullError struct {
	Reference string
	Version   string
	Cause     PullCause
	Err       error
}

func (e *PullError) Error() string {
	return fmt.Sprintf("chart %s:%s: %s: %v", e.Reference, e.Version, e.Cause, e.Err)
}

func (e *PullError) Unwrap() error { return e.Err }

// Chart is a verified chart: where it came from and its content.
type Chart struct {
	// Name of the chart (its last reference segment).
	Name string
	// Reference is the chart's OCI reference without version.
	Reference string
	Version   string
	// Digest of the chart's manifest in the registry.
	Digest string
	Chart  *chart.Chart
}

// indexEntry is what the cache remembers of one reference:version.
type indexEntry struct {
	// Digest of the manifest: the chart's identity, its file name.
	Digest string `json:"digest"`
	// Content is the digest of the archive, checked when it is read back.
	Content string `json:"content"`
}

const indexFile = "index.json"

// pullTimeout bounds one registry request: Helm's registry client takes no
// context.
const pullTimeout = 2 * time.Minute

// Source pulls charts from OCI registries and keeps them on disk by digest,
// with an index of reference:version to the digest first resolved: a
// re-tagged version keeps it (docs/decisions.md). Safe for concurrent use.
type Source struct {
	dir string

	mu     sync.Mutex
	index  map[string]indexEntry
	loaded map[string]*chart.Chart // by manifest digest

	pulling sync.Mutex // one pull at a time; cache reads never wait for it
}

// NewSource opens (creating it if need be) the chart cache in dir.
func NewSource(dir string) (*Source, error) {
	if err := os.MkdirAll(filepath.Join(dir, "sha256"), 0o755); err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	s := &Source{dir: dir, index: map[string]indexEntry{}, loaded: map[string]*chart.Chart{}}
	b, err := os.ReadFile(filepath.Join(dir, indexFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("chart cache: %w", err)
	default:
		if err := json.Unmarshal(b, &s.index); err != nil {
			return nil, fmt.Errorf("chart cache index %s: %w", filepath.Join(dir, indexFile), err)
		}
	}
	return s, nil
}

// Reference is the OCI reference of chart name in repository.
func Reference(repository, name string) string {
	return strings.TrimSuffix(repository, "/") + "/" + name
}

// Cached is the chart at version from the cache; false when it was never
// pulled (or its file is gone or altered).
func (s *Source) Cached(reference, version string) (*Chart, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.index[key(reference, version)]
	if !ok {
		return nil, false
	}
	ch, ok := s.loaded[e.Digest]
	if !ok {
		var err error
		if ch, err = s.read(e); err != nil {
			return nil, false
		}
		s.loaded[e.Digest] = ch
	}
	return &Chart{Name: ch.Name(), Reference: reference, Version: version, Digest: e.Digest, Chart: ch}, true
}

// Get is the chart at version: from the cache, else pulled, verified and
// cached. A failure is a *PullError.
func (s *Source) Get(reference, version string) (*Chart, error) {
	if c, ok := s.Cached(reference, version); ok {
		return c, nil
	}
	s.pulling.Lock()
	defer s.pulling.Unlock()
	if c, ok := s.Cached(reference, version); ok { // pulled while we waited
		return c, nil
	}
	fail := func(cause PullCause, err error) error {
		return &PullError{Reference: reference, Version: version, Cause: cause, Err: err}
	}
	e, data, err := pull(reference, version)
	if err != nil {
		return nil, fail(classify(err), err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fail(Invalid, err)
	}
	if want := name(reference); ch.Name() != want || ch.Metadata.Version != version {
		return nil, fail(Invalid, fmt.Errorf("the registry served chart %s:%s", ch.Name(), ch.Metadata.Version))
	}
	if err := s.store(key(reference, version), e, data, ch); err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	return &Chart{Name: ch.Name(), Reference: reference, Version: version, Digest: e.Digest, Chart: ch}, nil
}

// pull resolves reference:version to its manifest digest and pulls by it:
// oras checks the manifest and each blob against their digests.
func pull(reference, version string) (indexEntry, []byte, error) {
	ref := strings.TrimPrefix(reference, registry.OCIScheme+"://")
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(&http.Client{
		Transport: registry.NewTransport(false), Timeout: pullTimeout,
	})}
	if loopback(ref) {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return indexEntry{}, nil, err
	}
	desc, err := client.Resolve(ref + ":" + strings.ReplaceAll(version, "+", "_"))
	if err != nil {
		return indexEntry{}, nil, err
	}
	res, err := client.Pull(ref + "@" + desc.Digest.String())
	if err != nil {
		return indexEntry{}, nil, err
	}
	return indexEntry{Digest: desc.Digest.String(), Content: res.Chart.Digest}, res.Chart.Data, nil
}

// classify names the cause of a pull failure. oras reports some digest
// mismatches (a Docker-Content-Digest header that contradicts the digest
// asked for) with an error of no type of its own, only its text.
func classify(err error) PullCause {
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case errors.Is(err, content.ErrMismatchedDigest),
		strings.Contains(err.Error(), "digest mismatch"):
		return DigestMismatch
	case errors.Is(err, errdef.ErrNotFound):
		return NotFound
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		return Unreachable
	default:
		return Invalid
	}
}

// loopback: the registry of ref is on a loopback address, spoken to over
// plain HTTP (Helm's --plain-http).
func loopback(ref string) bool {
	host, _, _ := strings.Cut(ref, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func key(reference, version string) string { return reference + ":" + version }

func name(reference string) string { return reference[strings.LastIndex(reference, "/")+1:] }

func (s *Source) file(d string) string {
	return filepath.Join(s.dir, "sha256", strings.TrimPrefix(d, "sha256:")+".tgz")
}

// read loads a cached chart, checking its archive against its digest.
func (s *Source) read(e indexEntry) (*chart.Chart, error) {
	data, err := os.ReadFile(s.file(e.Digest))
	if err != nil {
		return nil, err
	}
	d, err := digest.Parse(e.Content)
	if err != nil {
		return nil, err
	}
	if d.Algorithm().FromBytes(data) != d {
		return nil, fmt.Errorf("%s does not match its digest %s", s.file(e.Digest), d)
	}
	return loader.LoadArchive(bytes.NewReader(data))
}

// store writes the chart's archive, then the index naming it, each atomically.
func (s *Source) store(k string, e indexEntry, data []byte, ch *chart.Chart) error {
	if err := atomicfile.Write(s.file(e.Digest), data, 0o644); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	index := maps.Clone(s.index)
	index[k] = e
	b, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(s.dir, indexFile), b, 0o644); err != nil {
		return err
	}
	s.index = index
	s.loaded[e.Digest] = ch
	return nil
}
