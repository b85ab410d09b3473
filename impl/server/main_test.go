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

func openApp(t *testing.T, cfg config.Config) (*app.App, error) {
	t.Helper()
	a, err := app.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), "test", apitest.Simulated(nil))
	if err == nil {
		t.Cleanup(func() { a.Close() })
	}
	return a, err
}
