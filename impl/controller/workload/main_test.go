package workload_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// apiServer is a client of envtest's real kube-apiserver, on which the
// controller runs in a Manager for the whole test binary; nil without
// KUBEBUILDER_ASSETS (testdata/envtest/build.sh builds the binaries).
var apiServer client.Client

// restConfig reaches the same API server (tests start controllers of their
// own with it).
var restConfig *rest.Config

const skipNoServer = "workload controller tests need a real kube-apiserver: set KUBEBUILDER_ASSETS=$(bash testdata/envtest/build.sh)"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Println(skipNoServer)
		return m.Run()
	}
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "workload tests: starting envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "workload tests: stopping envtest: %v\n", err)
		}
	}()
	// The process's scheme and cache: Secrets without their values.
	scheme, err := cluster.Scheme()
	if err != nil {
		panic(err)
	}
	restConfig = cfg
	// Validators labelled apart are left to the tests' own controllers.
	cacheOptions := cluster.CacheOptions("", 0)
	notApart, err := labels.Parse("!" + apart)
	if err != nil {
		panic(err)
	}
	// On CacheOptions' own entry of the kind: a second entry of the same
	// kind (another key) would win or lose at random.
	for obj, by := range cacheOptions.ByObject {
		if _, ok := obj.(*v1alpha1.Validator); ok {
			by.Label = notApart
			cacheOptions.ByObject[obj] = by
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: cacheOptions, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "workload tests: manager: %v\n", err)
		return 1
	}
	if err := workload.New(workload.Options{MaxConcurrentReconciles: 2}).SetupWithManager(mgr); err != nil {
		fmt.Fprintf(os.Stderr, "workload tests: controller: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "workload tests: manager: %v\n", err)
		}
	}()
	// Assertions read the API server itself, not the manager's cache.
	apiServer, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "workload tests: client: %v\n", err)
		return 1
	}
	return m.Run()
}
