package cluster_test

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

// realServer is the API server of envtest, started once per test binary
// when KUBEBUILDER_ASSETS names a folder with kube-apiserver and etcd
// (testdata/envtest/build.sh builds them); nil: the suite runs on the
// embedded cluster and client-go fakes only.
var realServer *rest.Config

const (
	backendReal  = "cluster gateway tests: real kube-apiserver (envtest)"
	backendFakes = "cluster gateway tests: embedded cluster and client-go fakes; set KUBEBUILDER_ASSETS for a real API server too"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Println(backendFakes)
		return m.Run()
	}
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "deploy", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster gateway tests: starting envtest with KUBEBUILDER_ASSETS=%s: %v\n", os.Getenv("KUBEBUILDER_ASSETS"), err)
		return 1
	}
	fmt.Println(backendReal)
	realServer = cfg
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster gateway tests: stopping envtest: %v\n", err)
	}
	return code
}

// TestKubeBackend fails on CI without a real API server: the fakes accept
// objects a real server refuses (CronJob schedules, CRD schemas, status).
func TestKubeBackend(t *testing.T) {
	if realServer != nil {
		t.Log(backendReal)
		return
	}
	t.Log(backendFakes)
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set but KUBEBUILDER_ASSETS is not: CI must run the cluster gateway tests against a real API server (export KUBEBUILDER_ASSETS=\"$(bash testdata/envtest/build.sh)\")")
	}
}
