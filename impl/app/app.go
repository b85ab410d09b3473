// Package app assembles one validator-manager process from its
// configuration: database, cluster gateway, identity provider, token
// verification, both API releases and their background work. The binary and
// the contract-test harness build the same thing.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/controller/intent"
	"github.com/validator-manager/validator-manager/impl/docs"
	"github.com/validator-manager/validator-manager/impl/idp"
	"github.com/validator-manager/validator-manager/impl/management"
	"github.com/validator-manager/validator-manager/impl/platform"
	"github.com/validator-manager/validator-manager/impl/sandbox"
	"github.com/validator-manager/validator-manager/impl/server"
	"github.com/validator-manager/validator-manager/impl/store"
	"github.com/validator-manager/validator-manager/impl/telemetry"
)

// Conformance of the adapters to the ports their consumers declare.
var (
	_ management.Store   = (*store.Store)(nil)
	_ management.Cluster = (*cluster.Kube)(nil)
	_ management.Intent  = (*intent.Controller)(nil)
	_ intent.Store       = (*store.Store)(nil)
	_ intent.Cluster     = (*cluster.Kube)(nil)
	_ intent.Identity    = (*idp.Keycloak)(nil)
	_ intent.Identity    = (*idp.Local)(nil)
	_ platform.Resources = (*cluster.Kube)(nil)
	_ server.Auditor     = (*store.Store)(nil)
)

// Intervals of the background work.
const (
	probeInterval = 30 * time.Second
	probeTimeout  = 3 * time.Second
)

// App is a running process's parts.
type App struct {
	Config config.Config
	Log    *slog.Logger
	Store  *store.Store
	// Cluster is the gateway release 1.11 uses; Embedded is set when it is
	// the embedded default's cluster (client-go fakes persisted in the data
	// directory, with a simulated kubelet).
	Cluster  *cluster.Kube
	Embedded *cluster.Embedded
	Identity intent.Identity
	// Intent keeps the identity provider and the cluster in step with the
	// database.
	Intent *intent.Controller
	// Issuer signs development tokens; nil when tokens come from an external
	// identity provider (api.auth.jwksUri set).
	Issuer     *auth.DevIssuer
	Management *management.Server
	Server     *server.Server
	// Telemetry is the process's operational metrics (/actuator/prometheus);
	// upstream clients observe their calls through it (Transport, ObserveUpstream).
	Telemetry *telemetry.Metrics

	// Sandbox is the embedded default's simulated network (nil otherwise).
	Sandbox *sandbox.Network
}

// Wiring is what options may change before the parts are assembled.
type Wiring struct {
	Management *management.Options
	Intent     *intent.Options
	Server     *server.Options
	// Embedded is the embedded cluster's options (cluster.mode simulated).
	Embedded *cluster.EmbeddedOptions

	Sandbox *sandbox.Options // the embedded default's network (issue 9)
}

// Option adjusts the wiring (tests replace a part with a failing one).
type Option func(Wiring)

// WithManagement edits release 1.11's parts before its server is built.
func WithManagement(f func(*management.Options)) Option {
	return func(w Wiring) {
		if w.Management != nil {
			f(w.Management)
		}
	}
}

// WithIntent edits the intent controller's parts before it is built.
func WithIntent(f func(*intent.Options)) Option {
	return func(w Wiring) {
		if w.Intent != nil {
			f(w.Intent)
		}
	}
}

// WithServer edits the HTTP server's parts before it is built.
func WithServer(f func(*server.Options)) Option {
	return func(w Wiring) {
		if w.Server != nil {
			f(w.Server)
		}
	}
}

// WithEmbedded edits the embedded cluster's options before it is opened
// (tests set the simulated kubelet's clock).
func WithEmbedded(f func(*cluster.EmbeddedOptions)) Option {
	return func(w Wiring) {
		if w.Embedded != nil {
			f(w.Embedded)
		}
	}
}

// Open builds the process without starting anything; Run serves and runs
// its background work.
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
	pool := store.Pool{
		MaxOpen:     int(cfg.DatabaseMaxOpenConns),
		MaxIdle:     int(cfg.DatabaseMaxIdleConns),
		MaxLifetime: cfg.DatabaseConnMaxLifetime,
		MaxIdleTime: cfg.DatabaseConnMaxIdleTime,
	}
	if a.Store, err = store.OpenWith(driver, dsn, pool); err != nil {
		return nil, err
	}
	if err := a.openCluster(ctx, opts); err != nil {
		return nil, err
	}
	if err := a.openIdentity(); err != nil {
		return nil, err
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

	io := intent.Options{Store: a.Store, Cluster: a.Cluster, Identity: a.Identity, Logger: log}
	for _, opt := range opts {
		opt(Wiring{Intent: &io})
	}
	if a.Intent, err = intent.New(io); err != nil {
		return nil, err
	}
	mo := management.Options{
		Store:     a.Store,
		Cluster:   a.Cluster,
		Intent:    a.Intent,
		Namespace: cfg.Namespace,
		Logger:    log,
		// The outbound address policy (outbound.go).
		ValidatorAddresses:   a.validatorAddressPolicy(),
		ParticipantAddresses: a.outboundPolicy(),
		Dial:                 a.outboundPolicy().DialContext,
	}
	for _, opt := range opts {
		opt(Wiring{Management: &mo})
	}
	a.Management = management.New(mo)
	a.Telemetry = telemetry.New()
	a.Telemetry.WatchSync(a.Cluster.SyncState)
	ups, err := a.openUpstreams(opts)
	if err != nil {
		return nil, err
	}
	plat := platform.New(platform.Options{
		Health:  a.health(),
		Version: version,
		Docs:    d,
		// Release 2.0's Validator/Application reads and application metrics,
		// and its upstream proxy.
		Resources: a.Cluster,
		Upstreams: ups,
		Logger:    log,
	})
	so := server.Options{
		Logger:     log,
		Verifier:   verifier,
		Management: a.Management,
		Platform:   plat,
		Plain: map[string]server.PlainHandler{
			"openLedgerConsole": plat.LedgerConsole,
			"getPrometheus":     plainHandler(a.Telemetry.Handler()),
		},
		Docs:           d,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		MaxUploadBytes: cfg.MaxUploadBytes,
		RequestTimeout: cfg.RequestTimeout,
		// Robustness against slow or oversized requests (issue 7).
		BodyReadTimeout: cfg.BodyReadTimeout,
		UploadTimeout:   cfg.UpstreamTimeout,
		MaxHeaderBytes:  int(cfg.MaxHeaderBytes),
		ManagementDoc:   mgmtDoc,
		PlatformDoc:     platDoc,
		// Operational metrics and the audit log of mutating 2.0 calls (issue 9).
		Metrics: a.Telemetry,
		Audit:   a.Store,
		Public:  metricsPublic(cfg),
	}
	for _, opt := range opts {
		opt(Wiring{Server: &so})
	}
	if a.Server, err = server.New(so); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

func (a *App) openCluster(ctx context.Context, opts []Option) error {
	cfg := a.Config
	instance, err := a.Store.Instance(ctx)
	if err != nil {
		return err
	}
	ko := cluster.KubeOptions{Instance: instance}
	var k *cluster.Kube
	if cfg.ClusterMode == config.ClusterSimulated {
		eo := cluster.EmbeddedOptions{Namespace: cfg.Namespace, Logger: a.Log, Kube: ko}
		for _, opt := range opts {
			opt(Wiring{Embedded: &eo})
		}
		e, err := cluster.OpenEmbedded(filepath.Join(cfg.DataDir, "cluster"), eo)
		if err != nil {
			return err
		}
		a.Embedded, k = e, e.Kube
	} else {
		rc, err := cluster.RESTConfig(cfg.ClusterMode, cfg.Kubeconfig)
		if err != nil {
			return fmt.Errorf("cluster.mode=%s: %w", cfg.ClusterMode, err)
		}
		if k, err = cluster.NewKube(rc, cfg.Namespace, ko); err != nil {
			return err
		}
	}
	a.Cluster = k
	return nil
}

func (a *App) openIdentity() error {
	cfg := a.Config
	if cfg.IdentityMode == config.IdentityLocal {
		installation, err := a.Store.Instance(context.Background())
		if err != nil {
			return err
		}
		local, err := idp.OpenLocalFor(filepath.Join(cfg.DataDir, "idp"), installation)
		if err != nil {
			return err
		}
		a.Identity = local
		return nil
	}
	kc, err := idp.NewKeycloak(idp.KeycloakConfig{
		BaseURL:      cfg.KeycloakURL,
		Realm:        cfg.KeycloakRealm,
		ClientID:     cfg.KeycloakClientID,
		ClientSecret: cfg.KeycloakClientSecret,
	})
	if err != nil {
		return fmt.Errorf("idp.keycloak: %w", err)
	}
	a.Identity = kc
	return nil
}

// StartCluster starts the cluster gateway's caches and waits, until ctx
// ends, for their first sync; they run until Close. It fails fast when the
// cluster does not serve the Validator resource.
func (a *App) StartCluster(ctx context.Context) error {
	if err := a.Cluster.Start(ctx); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	// The first sync decoded every cached object once: give that garbage
	// back to the OS now rather than over minutes (at 100,000 validators
	// the caches keep about 0.5 GB; the sync had the heap at twice that).
	debug.FreeOSMemory()
	return nil
}

// Run serves on ln and runs every piece of background work in one group
// until ctx ends or one of them fails: the cluster gateway's caches (and, on
// the embedded default, its simulated kubelet), the reconciler, the phase
// sync, the remote-participant probes and the refresh of stale list views. It returns once all of them have
// returned, so Close may then release the gateway and the store.
func (a *App) Run(ctx context.Context, ln net.Listener) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.Server.Serve(ctx, ln, a.Config.ShutdownTimeout) })
	g.Go(func() error {
		// Until the caches have synced and the reconciler's first pass is
		// done, health reports the cluster DOWN (clusterHealth).
		if err := a.StartCluster(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if a.Embedded != nil {
			g.Go(func() error { return a.Embedded.Run(ctx) })
		}
		return a.Intent.Start(ctx)
	})
	g.Go(func() error { a.Management.ProbeParticipants(ctx, probeInterval, probeTimeout); return nil })
	g.Go(func() error {
		// Lists are right without it (a stale view is rendered on read);
		// a failure is logged and the next start tries again.
		if err := a.Management.RefreshListViews(ctx); err != nil && ctx.Err() == nil {
			a.Log.WarnContext(ctx, "refreshing the validators' list views", "error", err)
		}
		return nil
	})
	return g.Wait()
}

// StartIntent runs the intent controller until the returned stop is called
// (tests that drive the rest of the background work themselves).
func (a *App) StartIntent(t interface{ Errorf(string, ...any) }) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Intent.Start(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("intent controller: %v", err)
		}
	}()
	return func() { cancel(); <-done }
}

// plainHandler serves an operation with a net/http handler.
func plainHandler(h http.Handler) server.PlainHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
}

// metricsPublic lists getPrometheus among the public operations when
// api.metrics.public is set.
func metricsPublic(cfg config.Config) []string {
	if cfg.MetricsPublic {
		return []string{"getPrometheus"}
	}
	return nil
}

// clusterHealth is UP when the cluster answers, the gateway's caches have
// synced and the reconciler has brought every validator in step once.
type clusterHealth struct{ a *App }

func (h clusterHealth) Ping(ctx context.Context) error {
	if h.a.Embedded != nil {
		if err := h.a.Embedded.Ping(ctx); err != nil {
			return err
		}
	} else if err := h.a.Cluster.Ping(ctx); err != nil {
		return err
	}
	return h.a.Intent.Ping(ctx)
}

// verifier trusts the configured JWKS, or the development issuer of the data
// directory when none is configured.
func (a *App) verifier(ctx context.Context) (*auth.Verifier, error) {
	if a.Config.JWKSURI != "" {
		keys, err := auth.LoadKeys(ctx, a.Config.JWKSURI, &http.Client{Timeout: 10 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("api.auth.jwksUri: %w", err)
		}
		if a.Config.Audience == "" {
			// Release 2.0 says any token of the issuer may call every
			// endpoint; where the same realm also issues tokens to wallet
			// users, an audience is what keeps them out.
			a.Log.Warn("api.auth.audience is not set: every token the identity provider signs is accepted, including wallet users' tokens of the same realm")
		}
		return auth.NewVerifier(keys, a.Config.Issuer, a.Config.Audience), nil
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
	// Development tokens carry no audience.
	return auth.NewVerifier(issuer.PublicKeys(), iss, ""), nil
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
	if a.Sandbox != nil {
		a.Sandbox.Close()
	}
	if a.Embedded != nil {
		a.Embedded.Close() // the gateway, then its object store
	} else if a.Cluster != nil {
		a.Cluster.Close()
	}
	if a.Store != nil {
		return a.Store.Close()
	}
	return nil
}
