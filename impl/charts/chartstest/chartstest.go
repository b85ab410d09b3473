// Package chartstest serves the project's own test charts (impl/charts/testdata:
// splice-participant and splice-validator, nothing of Splice's) from an
// in-memory OCI registry on a loopback address, for the tests of the chart
// renderer and of the workload controller in chart mode. Used by tests
// only.
package chartstest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
)

// Charts are the names of the test charts, as Splice names its own.
var Charts = []string{"splice-participant", "splice-validator"}

// Versions the test charts are pushed at by default: they differ in what
// they render (testdata/README.md: 0.9.1 drops the Service wallet-web-ui and
// adds the ConfigMap validator-settings).
const (
	V1 = "0.9.0"
	V2 = "0.9.1"
)

// Registry is an in-memory OCI registry under httptest, on 127.0.0.1.
type Registry struct {
	Server *httptest.Server
	// Repository is the charts' OCI prefix, the setting splice.charts:
	// oci://127.0.0.1:<port>/charts.
	Repository string
}

// NewRegistry starts a registry, stopped when t ends. wrap, when given,
// wraps the registry's handler (to alter what it serves).
func NewRegistry(t testing.TB, wrap ...func(http.Handler) http.Handler) *Registry {
	t.Helper()
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	for _, w := range wrap {
		h = w(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Registry{Server: srv, Repository: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts"}
}

// Push packages every test chart at each version and pushes it, with
// Helm's registry client, as <Repository>/<chart>:<version>.
func (r *Registry) Push(t testing.TB, versions ...string) {
	t.Helper()
	for _, v := range versions {
		r.PushDir(t, Dir(), v)
	}
}

// PushDir packages the charts named Charts in dir (chart directories, as
// Splice's are once built) at version and pushes them as
// <Repository>/<chart>:<version>.
func (r *Registry) PushDir(t testing.TB, dir, version string) {
	t.Helper()
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Charts {
		ref := strings.TrimPrefix(r.Repository, "oci://") + "/" + name + ":" + version
		if _, err := client.Push(packageDir(t, filepath.Join(dir, name), version), ref); err != nil {
			t.Fatalf("push %s: %v", ref, err)
		}
	}
}

// Package is the archive (.tgz) of test chart name at version (its version
// and appVersion).
func Package(t testing.TB, name, version string) []byte {
	t.Helper()
	return packageDir(t, filepath.Join(Dir(), name), version)
}

func packageDir(t testing.TB, dir, version string) []byte {
	t.Helper()
	ch, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ch.Metadata.Version = version
	ch.Metadata.AppVersion = version
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Dir is the directory of the test charts (impl/charts/testdata).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}
