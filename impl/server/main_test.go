package server_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
)

func TestMain(m *testing.M) { apitest.Main(m) }

// openApp opens the embedded default of cfg on the process's control plane,
// in a namespace of its own.
func openApp(t *testing.T, cfg config.Config) (*app.App, error) {
	t.Helper()
	cfg.ClusterMode, cfg.Namespace = config.ClusterEmbedded, apitest.Namespace()
	a, err := app.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), "test", app.WithControlPlane(apitest.ControlPlane(t)), apitest.SeveralManagers())
	if err == nil {
		t.Cleanup(func() { a.Close() })
	}
	return a, err
}
