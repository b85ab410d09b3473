package runs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/validator-manager/validator-manager/impl/controller/runs"
	"github.com/validator-manager/validator-manager/impl/store"
)

// apiServer is a client of envtest's real kube-apiserver and db the store
// the controller records into; the controller runs in a Manager for the
// whole test binary. apiServer is nil without KUBEBUILDER_ASSETS
// (testdata/envtest/build.sh builds the binaries).
var (
	apiServer client.Client
	db        *store.Store
)

const skipNoServer = "run controller tests need a real kube-apiserver: set KUBEBUILDER_ASSETS=$(bash testdata/envtest/build.sh)"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Println(skipNoServer)
		return m.Run()
	}
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "runs-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "run tests: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if db, err = store.Open("sqlite", filepath.Join(dir, "vm.db")); err != nil {
		fmt.Fprintf(os.Stderr, "run tests: store: %v\n", err)
		return 1
	}
	defer db.Close()
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "run tests: starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "run tests: stopping envtest: %v\n", err)
		}
	}()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "run tests: manager: %v\n", err)
		return 1
	}
	if err := runs.New(db).SetupWithManager(mgr); err != nil {
		fmt.Fprintf(os.Stderr, "run tests: controller: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "run tests: manager: %v\n", err)
		}
	}()
	if apiServer, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "run tests: client: %v\n", err)
		return 1
	}
	return m.Run()
}
