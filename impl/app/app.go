// Package app assembles one validator-manager process from its
// configuration: database, cluster gateway, token verification, both API
// releases. The binary and the contract-test harness build the same thing.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/docs"
	"github.com/validator-manager/validator-manager/impl/management"
	"github.com/validator-manager/validator-manager/impl/platform"
	"github.com/validator-manager/validator-manager/impl/server"
	"github.com/validator-manager/validator-manager/impl/store"
)

// App is a running process's parts.
type App struct {
	Config config.Config
	Log    *slog.Logger
	Store  *store.Store
	// Issuer signs development tokens; nil when tokens come from an external
	// identity provider (api.auth.jwksUri set).
	Issuer *auth.DevIssuer
	Server *server.Server
}

// Open builds the process. Parts whose production implementation comes with a
// later release of this server are refused with a clear error rather than
// silently simulated.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger, version string, opts ...Option) (*App, error) {
	a := &App{Config: cfg, Log: log}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()

	var err error
	driver, dsn := cfg.DatabaseDriver(), cfg.DatabaseDSN
	if driver == "sqlite" {
		dsn = cfg.SQLitePath()
	}
	if a.Store, err = store.Open(driver, dsn); err != nil {
		return nil, err
	}

	var gateway platform.Pinger
	switch cfg.ClusterMode {
	case config.ClusterSimulated:
		if gateway, err = cluster.OpenSimulated(filepath.Join(cfg.DataDir, "cluster")); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("cluster.mode=%s: the client-go cluster gateway is not built yet in this server version; use cluster.mode=simulated", cfg.ClusterMode)
	}
	if cfg.IdentityMode != config.IdentityLocal {
		return nil, fmt.Errorf("idp.mode=%s: the Keycloak identity provider is not built yet in this server version; use idp.mode=local", cfg.IdentityMode)
	}

	verifier, err := a.verifier(ctx)
	if err != nil {
		return nil, err
	}
	mgmtDoc, platDoc, err := server.Contracts()
	if err != nil {
		return nil, err
	}
	d, err := docs.New(platDoc, mgmtDoc)
	if err != nil {
		return nil, err
	}
	so := server.Options{
		Logger:     log,
		Verifier:   verifier,
		Management: management.New(),
		Platform: platform.New(platform.Options{
			Health:  map[string]platform.Pinger{"db": a.Store, "cluster": gateway},
			Version: version,
			Docs:    d,
		}),
		Docs:           d,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		MaxUploadBytes: cfg.MaxUploadBytes,
		RequestTimeout: cfg.RequestTimeout,
	}
	for _, opt := range opts {
		opt(&so)
	}
	if a.Server, err = server.New(so); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

// Option adjusts the server's parts before it is assembled (tests replace a
// release's handlers with this).
type Option func(*server.Options)

// verifier trusts the configured JWKS, or the development issuer of the data
// directory when none is configured.
func (a *App) verifier(ctx context.Context) (*auth.Verifier, error) {
	if a.Config.JWKSURI != "" {
		keys, err := auth.LoadKeys(ctx, a.Config.JWKSURI, &http.Client{Timeout: 10 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("api.auth.jwksUri: %w", err)
		}
		return auth.NewVerifier(keys, a.Config.Issuer), nil
	}
	issuer, err := auth.OpenDevIssuer(a.Config.DataDir)
	if err != nil {
		return nil, err
	}
	a.Issuer = issuer
	iss := a.Config.Issuer
	if iss == "" {
		iss = auth.DevIssuerName
	}
	return auth.NewVerifier(issuer.PublicKeys(), iss), nil
}

// DevToken issues a development token, or explains why there is none.
func (a *App) DevToken() (string, error) {
	if a.Issuer == nil {
		return "", errors.New("tokens come from the identity provider behind api.auth.jwksUri; the development issuer is off")
	}
	return a.Issuer.Issue(auth.DevSubject, a.Config.TokenTTL)
}

// Close releases what Open acquired.
func (a *App) Close() error {
	if a.Store != nil {
		return a.Store.Close()
	}
	return nil
}
