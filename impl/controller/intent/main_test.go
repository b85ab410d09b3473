package intent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// apiServer is envtest's API server when KUBEBUILDER_ASSETS is set: the
// tests that run the controller run it under a Manager, as the process
// does; nil: they skip.
var apiServer *rest.Config

const skipNoServer = "the intent controller runs under a Manager, which needs a real kube-apiserver: set KUBEBUILDER_ASSETS=$(bash testdata/envtest/build.sh)"

func TestMain(m *testing.M) { os.Exit(run0(m)) }

func run0(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return m.Run()
	}
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "intent tests: starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "intent tests: stopping envtest: %v\n", err)
		}
	}()
	apiServer = cfg
	return m.Run()
}
