package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
)

// apiServer is envtest's real kube-apiserver with the CRDs installed, and
// kubeconfig a file that reaches it (the replicas run with
// cluster.mode=kubeconfig); nil without KUBEBUILDER_ASSETS
// (testdata/envtest/build.sh builds the binaries).
var (
	apiServer  *rest.Config
	kubeconfig string
)

const skipNoServer = "replica tests need a real kube-apiserver: set KUBEBUILDER_ASSETS=$(bash testdata/envtest/build.sh)"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == nodesim.Command {
		// The simulated node of an embedded default a test opens: the
		// server re-executes its binary, this one.
		if err := nodesim.Main(context.Background(), os.Args[2:], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "nodesim:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Println(skipNoServer)
		return m.Run()
	}
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "app tests: starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "app tests: stopping envtest: %v\n", err)
		}
	}()
	dir, err := os.MkdirTemp("", "app-test-kubeconfig")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	apiServer = cfg
	return m.Run()
}
