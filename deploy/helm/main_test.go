package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// apiServer is envtest's real kube-apiserver (RBAC authorization on) with
// the chart's CRDs and a minimal ServiceMonitor CRD installed, and
// adminKubeconfig the file that reaches it as its administrator; nil
// without KUBEBUILDER_ASSETS. Rendering and linting need neither.
var (
	apiServer       *rest.Config
	adminKubeconfig []byte
)

const skipNoServer = "applying the chart needs a real kube-apiserver: set KUBEBUILDER_ASSETS=$(bash testdata/envtest/build.sh)"

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Println(skipNoServer)
		return m.Run()
	}
	env := &envtest.Environment{
		// What `helm install` applies first (the chart's crds/), and the
		// Prometheus Operator's CRD the ServiceMonitor needs.
		CRDDirectoryPaths:     []string{filepath.Join(chartDir, "crds"), filepath.Join("testdata", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "helm tests: starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "helm tests: stopping envtest: %v\n", err)
		}
	}()
	apiServer, adminKubeconfig = cfg, env.KubeConfig
	return m.Run()
}
