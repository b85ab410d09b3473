// Package app assembles one validator-manager process from its
// configuration; the binary and the contract-test harness build the same.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/validator-manager/validator-manager/impl/controller/runs"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/embedded/engine"
	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"

	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/controller/gateway"
	"github.com/validator-manager/validator-manager/impl/controller/intent"
	"github.com/validator-manager/validator-manager/impl/docs"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
	"github.com/validator-manager/validator-manager/impl/idp"
	"github.com/validator-manager/validator-manager/impl/live"
	"github.com/validator-manager/validator-manager/impl/management"
	"github.com/validator-manager/validator-manager/impl/platform"
	"github.com/validator-manager/validator-manager/impl/server"
	"github.com/validator-manager/validator-manager/impl/store"
	"github.com/validator-manager/validator-manager/impl/telemetry"
	"github.com/validator-manager/validator-manager/impl/upstream"
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
	// Cluster is the gateway release 1.11 uses.
	Cluster  *cluster.Kube
	Identity intent.Identity
	Intent   *intent.Controller
	// Engine is the embedded default's control plane, nil otherwise; its
	// simulated node is its child process, serving pod metrics at nodeMetrics.
	Engine      *engine.Engine
	nodeMetrics string
	// Nodes is the in-process simulated node on a shared control plane (tests).
	Nodes *nodesim.Simulator
	rest  *rest.Config
	// mgr's cache is the one the gateway and every controller read.
	mgr manager.Manager
	// Issuer signs development tokens; nil with api.auth.jwksUri.
	Issuer     *auth.DevIssuer
	Management *management.Server
	Server     *server.Server
	Telemetry  *telemetry.Metrics

	Sandbox   *sandbox.Network // the embedded default's, nil otherwise
	Upstreams *upstream.Clients
	watch     *watchFeed

	lead leadership
	opts []Option // Open's, for the parts Run builds
	// installation is the database's instance id, which every store of the
	// data directory records; expected: the database holds validators.
	installation string
	expected     bool
	workload     workload.Options
	charts       *charts.Renderer // chart mode's, else nil
}

// Option edits the options of one part before it is built (tests replace
// a part with a failing one): a func(*T) of that part's options type T.
type Option struct{ edit any }

// apply hands p to every option that edits a T.
func apply[T any](a *App, p *T) {
	for _, o := range a.opts {
		if f, ok := o.edit.(func(*T)); ok {
			f(p)
		}
	}
}

// With edits a part's options T before it is built: those of management,
// intent, server, the Manager, workload or sandbox. Any other T panics, so
// that an option no part would apply is not silently ignored.
func With[T any](f func(*T)) Option {
	switch any((*T)(nil)).(type) {
	case *management.Options, *intent.Options, *server.Options, *manager.Options, *workload.Options, *sandbox.Options:
		return Option{f}
	}
	panic(fmt.Sprintf("app.With: no part is built from %T", (*T)(nil)))
}

// WithControlPlane makes the embedded default use the running control plane
// of rc: a test process shares one among its servers, a namespace each.
func WithControlPlane(rc *rest.Config) Option {
	return Option{func(p **rest.Config) { *p = rc }}
}

// apiDocs is both releases' descriptions and page, rendered once per process.
var apiDocs = sync.OnceValues(func() (*docs.Docs, error) {
	mgmt, plat, err := server.Contracts()
	if err != nil {
		return nil, err
	}
	return docs.New(plat, mgmt)
})

// Open builds the process without starting anything (Run does).
func Open(ctx context.Context, cfg config.Config, log *slog.Logger, version string, opts ...Option) (*App, error) {
	// Whatever logs with a request's context names the request.
	log = slog.New(server.LogRequestIDs(log.Handler()))
	a := &App{Config: cfg, Log: log, opts: opts}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()

	// First: a chart mode this build cannot run fails before anything starts.
	if err := a.openWorkload(); err != nil {
		return nil, err
	}
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
	if err := a.openCluster(ctx); err != nil {
		return nil, err
	}
	if cfg.LeaderElectionEnabled() {
		a.lead.enabled = true
		if a.lead.identity, err = leaderIdentity(cfg.LeaderElectionIdentity); err != nil {
			return nil, err
		}
	}
	if err := a.openManager(); err != nil {
		return nil, err
	}
	if err := a.openIdentity(ctx); err != nil {
		return nil, err
	}
	verifier, err := a.verifier(ctx)
	if err != nil {
		return nil, err
	}
	d, err := apiDocs()
	if err != nil {
		return nil, err
	}

	io := intent.Options{Store: a.Store, Cluster: a.Cluster, Identity: a.Identity, Logger: log, Namespace: cfg.Namespace, Workers: intentWorkers,
		Charts: a.charts != nil}
	apply(a, &io)
	a.Intent = intent.New(io)
	if err := a.Intent.SetupWithManager(a.mgr); err != nil {
		return nil, fmt.Errorf("intent controller: %w", err)
	}
	gwo := gateway.Options{Store: a.Store, Keys: a.Cluster, Namespace: cfg.Namespace, Logger: log}
	if err := gateway.New(a.mgr.GetClient(), gwo).SetupWithManager(a.mgr); err != nil {
		return nil, fmt.Errorf("wallet gateway controller: %w", err)
	}
	a.Telemetry = telemetry.New()
	// The controllers' and the client's metrics (rate limits are sized by them).
	a.Telemetry.Also(ctrlmetrics.Registry)
	ctrlmetrics.RegisterRESTClientMetrics(ctrlmetrics.MetricRateLimiterLatency)
	mo := management.Options{
		Store:                a.Store,
		Cluster:              a.managementCluster(),
		Intent:               a.Intent,
		Namespace:            cfg.Namespace,
		Logger:               log,
		ValidatorAddresses:   a.validatorAddressPolicy(),
		ParticipantAddresses: a.outboundPolicy(),
		Dial:                 a.outboundPolicy().DialContext,
		ObserveProbe:         a.Telemetry.ObserveProbe,
	}
	if a.charts != nil {
		mo.Charts = charts.Checker{Renderer: a.charts, Resource: a.Cluster.ValidatorResource}
		mo.Release = a.releaseNamespace()
	}
	apply(a, &mo)
	a.Management = management.New(mo)
	a.Telemetry.WatchSync(a.Cluster.SyncState)
	ups, err := a.openUpstreams()
	if err != nil {
		return nil, err
	}
	console, err := a.console()
	if err != nil {
		return nil, err
	}
	a.watch = newWatchFeed(a.Cluster.Manages)
	plat := platform.New(platform.Options{
		Health:    a.health(),
		Version:   version,
		Docs:      d,
		Resources: a.Cluster,
		Upstreams: ups,
		Logger:    log,
		Gateway:   a.Store,
		Keys:      a.Cluster,
		Console:   console,
		Leader:    a.leaderHealthFunc(),
		Audit:     a.Store,
	})
	so := server.Options{
		Logger:     log,
		Verifier:   verifier,
		Management: a.Management,
		Platform:   plat,
		Plain: map[string]server.PlainHandler{
			"openLedgerConsole": plat.LedgerConsole,
			"getPrometheus":     plainHandler(a.Telemetry.Handler()),
			"watchValidators":   live.Stream{Hub: a.watch.platform}.Serve,
		},
		ManagementPlain: map[string]server.PlainHandler{
			"watchValidators": live.Stream{Hub: a.watch.management}.Serve,
		},
		Docs:            d,
		MaxBodyBytes:    cfg.MaxBodyBytes,
		MaxUploadBytes:  cfg.MaxUploadBytes,
		RequestTimeout:  cfg.RequestTimeout,
		BodyReadTimeout: cfg.BodyReadTimeout,
		UploadTimeout:   cfg.UpstreamTimeout,
		MaxHeaderBytes:  int(cfg.MaxHeaderBytes),
		Metrics:         a.Telemetry,
		Audit:           a.Store,
	}
	if cfg.MetricsPublic { // api.metrics.public
		so.Public = []string{"getPrometheus"}
	}
	apply(a, &so)
	if a.Server, err = server.New(so); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

// openCluster checks the data directory's stores against the database
// (datadir.go) and connects the cluster; on the embedded default it starts
// the control plane first, whose etcd records the installation too.
func (a *App) openCluster(ctx context.Context) error {
	cfg := a.Config
	claims := a.fileClaims()
	var err error
	var core kubernetes.Interface
	var present bool
	var inCluster string
	switch cfg.ClusterMode {
	case config.ClusterEmbedded:
		var shared *rest.Config
		apply(a, &shared)
		if a.rest, err = a.startEngine(ctx, shared); err != nil {
			return err
		}
		// A shared control plane (tests) belongs to no data directory.
		if a.Engine != nil {
			if core, err = kubernetes.NewForConfig(a.rest); err != nil {
				return err
			}
			if present, inCluster, err = readClusterRecord(ctx, core, cfg.Namespace); err != nil {
				return err
			}
			if present {
				claims = append(claims, claim{store: config.StoreCluster, where: a.clusterWhere(), installation: inCluster})
			}
		}
	default:
		if a.rest, err = cluster.RESTConfig(cfg.ClusterMode, cfg.Kubeconfig); err != nil {
			return fmt.Errorf("cluster.mode=%s: %w", cfg.ClusterMode, err)
		}
	}
	// Read after the claims: a server starting beside this one records the
	// installation in the database before it does in any other store.
	recorded, validators, err := a.Store.Recorded(ctx)
	if err != nil {
		return err
	}
	a.expected = validators
	if err := checkNewDatabase(a.databaseName(), recorded, claims, cfg.Afresh); err != nil {
		return err
	}
	if a.installation, err = a.Store.Instance(ctx); err != nil {
		return err
	}
	if core != nil {
		write, err := checkClusterRecord(a.clusterWhere(), present, inCluster, a.installation, validators, a.Engine.Fresh(), cfg.Afresh(config.StoreCluster))
		if err != nil {
			if a.Engine.Fresh() {
				// Else the next start would find this empty cluster
				// initialized, and take it for one made before the record.
				if aerr := a.Engine.Abandon(); aerr != nil {
					return fmt.Errorf("%w (abandoning the new cluster: %v)", err, aerr)
				}
			}
			return err
		}
		if write {
			switch {
			case present || validators && a.Engine.Fresh():
				a.Log.Warn("starting the cluster afresh (startAfresh): its installation record is rewritten and the validators made again from the database", "was", inCluster, "now", a.installation)
			case validators:
				a.Log.Info("recording the installation in a cluster made before the record", "installation", a.installation)
			}
			if err := writeClusterRecord(ctx, core, cfg.Namespace, a.installation); err != nil {
				return err
			}
		}
	}
	return nil
}

// Client rate limits of the process's one rest.Config: client-go's default
// is a wall for a controller that writes some 8 objects per validator; these
// leave the API server's own limits as the bound (docs/decisions.md).
const (
	clientQPS   = 200
	clientBurst = 400
	// intentWorkers reconcile different validators at once: each spends
	// most of its time waiting for the API server or the database.
	intentWorkers = 8
	// workloadWorkers likewise: a reconcile is some ten applies in a row,
	// each a round trip to the API server (docs/benchmarks.md).
	workloadWorkers = 8
	// resync re-delivers every cached object this often.
	resync = 10 * time.Minute
)

// onThisMachine tells whether the API server at host answers on loopback,
// where gzip saves nothing and costs both ends CPU (docs/benchmarks.md).
func onThisMachine(host string) bool {
	if !strings.Contains(host, "://") {
		host = "https://" + host // client-go's form without a scheme
	}
	u, err := url.Parse(host)
	return err == nil && config.Loopback(net.JoinHostPort(u.Hostname(), "0"))
}

// setCtrlLogger sets controller-runtime's process-wide logger once (tests
// open several apps at once; SetLogger is not safe to call concurrently).
var setCtrlLogger sync.Once

// openManager builds the controller-runtime Manager (Run starts it) and the
// cluster gateway over its cache, the one every controller reads.
func (a *App) openManager() error {
	// controller-runtime's logger is the process's: the first app's.
	setCtrlLogger.Do(func() { ctrllog.SetLogger(logr.FromSlogHandler(a.Log.Handler())) })
	a.rest = rest.CopyConfig(a.rest)
	a.rest.QPS, a.rest.Burst = clientQPS, clientBurst
	a.rest.DisableCompression = onThisMachine(a.rest.Host)
	scheme, err := cluster.Scheme()
	if err != nil {
		return err
	}
	grace := a.Config.ShutdownTimeout
	mo := manager.Options{
		Scheme:                  scheme,
		Cache:                   cluster.CacheOptions(a.Config.Namespace, resync),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: &grace,
	}
	if a.lead.enabled {
		lock, err := a.leaseLock()
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		cfg := a.Config
		mo.LeaderElection = true
		mo.LeaderElectionResourceLockInterface = lock
		mo.LeaderElectionID = cfg.LeaderElectionID
		mo.LeaderElectionNamespace = cfg.Namespace
		mo.LeaseDuration = &cfg.LeaderElectionLeaseDuration
		mo.RenewDeadline = &cfg.LeaderElectionRenewDeadline
		mo.RetryPeriod = &cfg.LeaderElectionRetryPeriod
		// A leader that stops releases the Lease, for a handover at once;
		// one that loses it exits without a graceful shutdown (docs/decisions.md).
		mo.LeaderElectionReleaseOnCancel = cfg.LeaderElectionReleaseOnCancel
	}
	if a.workload.Renderer != nil {
		// Each validator's objects in a namespace of its own.
		if err := cluster.ReleaseCache(&mo.Cache, a.Config.Namespace); err != nil {
			return err
		}
	}
	apply(a, &mo)
	if a.mgr, err = manager.New(a.rest, mo); err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	ko := cluster.KubeOptions{Instance: a.installation}
	switch {
	case a.Nodes != nil:
		ko.Metrics = a.Nodes.Metrics()
	case a.nodeMetrics != "":
		// The simulated node serves metrics.k8s.io's wire format.
		mc, err := metricsclient.NewForConfig(&rest.Config{Host: a.nodeMetrics, Timeout: probeTimeout, UserAgent: "validator-manager"})
		if err != nil {
			return err
		}
		ko.Metrics = mc.MetricsV1beta1()
	}
	a.Cluster, err = cluster.NewKube(a.mgr, a.Config.Namespace, ko)
	return err
}

// Manager is the process's controller-runtime Manager, which Run starts.
func (a *App) Manager() manager.Manager { return a.mgr }

// startEngine starts the embedded default's control plane in the data
// directory, or takes the shared one of WithControlPlane, and its simulated node.
func (a *App) startEngine(ctx context.Context, shared *rest.Config) (*rest.Config, error) {
	cfg := a.Config
	start := time.Now()
	capacity, err := cfg.NodeCapacity()
	if err != nil {
		return nil, err
	}
	rc, fresh, node, host := shared, false, nodesim.Options{Logger: a.Log, Capacity: capacity}, ""
	if shared == nil {
		a.Log.Info("starting the embedded control plane (etcd, kube-apiserver, kube-controller-manager)", "kubeconfig", filepath.Join(cfg.DataDir, "kubeconfig"))
		eng, err := engine.Start(ctx, engine.Options{
			Dir:        filepath.Join(cfg.DataDir, "cluster"),
			Kubeconfig: filepath.Join(cfg.DataDir, "kubeconfig"),
			Logger:     a.Log,
		})
		if err != nil {
			return nil, fmt.Errorf("embedded control plane: %w", err)
		}
		a.Engine = eng
		rc, fresh, host = eng.RESTConfig(), eng.Fresh(), eng.Host()
	} else {
		// On a shared control plane this server's node is its namespace's.
		node.NodeName, node.Namespace, host = "node-"+cfg.Namespace, cfg.Namespace, shared.Host
	}
	core, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	if cfg.Namespace != metav1.NamespaceDefault {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}
		_, err := core.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("embedded control plane: namespace %s: %w", cfg.Namespace, err)
		}
		fresh = fresh || (shared != nil && err == nil)
	}
	if fresh {
		if err := nodesim.CreateSampleApplication(ctx, dyn, cfg.Namespace); err != nil {
			return nil, fmt.Errorf("embedded control plane: %w", err)
		}
	}
	if a.Engine != nil {
		if err := a.startNode(capacity); err != nil {
			return nil, fmt.Errorf("embedded control plane: %w", err)
		}
	} else if a.Nodes, err = nodesim.New(rc, node); err != nil {
		return nil, err
	}
	a.Log.Info("embedded control plane ready", "seconds", time.Since(start).Seconds(), "apiServer", host)
	return rc, nil
}

// startNode starts the simulated node (this binary as `nodesim`) as a child
// the control plane supervises, as a kubelet runs beside, not in, the server.
func (a *App) startNode(capacity corev1.ResourceList) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("simulated node: %w", err)
	}
	// A fixed port: a restarted node serves where the server reads.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("simulated node: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	p := nodesim.Process{Kubeconfig: a.Engine.NodeKubeconfig(), MetricsAddress: addr, LogLevel: a.Config.LogLevel, Capacity: capacity}
	if err := a.Engine.Spawn(nodesim.Command, exe, append([]string{nodesim.Command}, p.Args()...)...); err != nil {
		return fmt.Errorf("simulated node: %w", err)
	}
	a.nodeMetrics = "http://" + addr
	return nil
}

// uis are where browsers reach the validators' UIs (ui.publicUrl).
func (a *App) uis() idp.UIs {
	return idp.UIs{Template: a.Config.UIPublicURL, Namespace: a.Config.Namespace}
}

func (a *App) openIdentity(ctx context.Context) error {
	cfg := a.Config
	if cfg.IdentityMode == config.IdentityLocal {
		return a.openAfresh(config.StoreIdentity, a.usersFile(), idp.ErrRefused, func(expected bool) error {
			local, err := idp.OpenLocal(filepath.Dir(a.usersFile()), idp.LocalOptions{Installation: a.installation, Expected: expected, UIs: a.uis()})
			if err != nil {
				return err
			}
			if expected {
				if err := a.checkWalletUsers(ctx, local); err != nil {
					return err
				}
			}
			a.Identity = local
			return nil
		})
	}
	kc, err := idp.NewKeycloak(idp.KeycloakConfig{
		BaseURL:      cfg.KeycloakURL,
		PublicURL:    cfg.KeycloakPublicURL,
		Realm:        cfg.KeycloakRealm,
		ClientID:     cfg.KeycloakClientID,
		ClientSecret: cfg.KeycloakClientSecret,
		UIs:          a.uis(),
	})
	if err != nil {
		return fmt.Errorf("idp.keycloak: %w", err)
	}
	a.Identity = kc
	return nil
}

// StartCluster waits, until ctx ends, for the first sync of the gateway's
// informers; it fails fast when the Validator resource is not served.
func (a *App) StartCluster(ctx context.Context) error {
	if err := a.Cluster.Start(ctx); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	// The first sync decoded every cached object once: give that garbage
	// back to the OS now rather than over minutes.
	debug.FreeOSMemory()
	return nil
}

// Run serves on ln and runs the background work and extra as Runnables of
// Open's Manager until ctx ends or one fails; it returns once all returned.
// The Manager stops the HTTP server first, then the controllers, schedules
// and probes, then the cache.
func (a *App) Run(ctx context.Context, ln net.Listener, extra ...manager.Runnable) error {
	served := make(chan struct{}) // the API server has stopped
	runnables := []manager.Runnable{
		// On every replica: the API and the caches its reads come from.
		runnable(false, func(ctx context.Context) error {
			defer close(served)
			return a.Server.Serve(ctx, ln, a.Config.ShutdownTimeout)
		}),
		runnable(false, a.runCluster),
		// The watch streams end before the HTTP server's shutdown gives up on them.
		runnable(false, a.RunWatch),
		// The leader's, like the controllers.
		runnable(true, a.leading),
		runnable(true, a.refreshListViews),
		runnable(true, a.purgeAudit),
		runnable(true, func(ctx context.Context) error {
			a.Management.ProbeParticipants(ctx, probeInterval, probeTimeout)
			return nil
		}),
	}
	if a.Nodes != nil {
		runnables = append(runnables, a.Nodes)
	}
	if a.Sandbox != nil {
		runnables = append(runnables, runnable(false, func(ctx context.Context) error { return a.serveSandbox(ctx, served) }))
	}
	for _, r := range append(runnables, extra...) {
		if err := a.mgr.Add(r); err != nil {
			return err
		}
	}
	// The workload controller starts (and lists its kinds) once the intent
	// controller is in step: at a restart they would compete with readiness.
	held := heldBack{Manager: a.mgr, until: a.Intent.InStep(), most: workloadHold}
	if err := workload.New(a.workload).SetupWithManager(held); err != nil {
		return fmt.Errorf("workload controller: %w", err)
	}
	if err := runs.New(a.Store).SetupWithManager(a.mgr); err != nil {
		return fmt.Errorf("run controller: %w", err)
	}
	return a.mgr.Start(ctx)
}

// serveSandbox serves the simulated network until ctx ends and the API
// server has stopped: requests in flight still reach their upstreams.
func (a *App) serveSandbox(ctx context.Context, served <-chan struct{}) error {
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan error, 1)
	go func() { done <- a.Sandbox.Start(sctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select { // bounded: a server that never started never stops
	case <-served:
	case <-time.After(a.Config.ShutdownTimeout):
	}
	stop()
	return <-done
}

// runCluster runs StartCluster; health is DOWN until it returns.
func (a *App) runCluster(ctx context.Context) error {
	if err := a.StartCluster(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	<-ctx.Done()
	return nil
}

// refreshListViews rewrites stale list views once; lists are right without
// it (rendered on read), so a failure is only logged.
func (a *App) refreshListViews(ctx context.Context) error {
	if err := a.Management.RefreshListViews(ctx); err != nil && ctx.Err() == nil {
		a.Log.WarnContext(ctx, "refreshing the validators' list views", "error", err)
	}
	return nil
}

// runnable is a Runnable of the Manager; leader: only the elected replica's.
func runnable(leader bool, start func(ctx context.Context) error) manager.Runnable {
	return leaderRunnable{RunnableFunc: manager.RunnableFunc(start), leader: leader}
}

type leaderRunnable struct {
	manager.RunnableFunc
	leader bool
}

func (r leaderRunnable) NeedLeaderElection() bool { return r.leader }

// workloadHold bounds how long the workload controller waits for the
// intent controller's first pass: a pass slowed by an unreachable identity
// provider must not stop validators' workloads from being kept.
const workloadHold = 30 * time.Second

// heldBack is a Manager whose Add holds each Runnable back until until is
// closed, or for most at the longest.
type heldBack struct {
	manager.Manager
	until <-chan struct{}
	most  time.Duration
}

func (m heldBack) Add(r manager.Runnable) error {
	return m.Manager.Add(held{Runnable: r, until: m.until, most: m.most})
}

type held struct {
	manager.Runnable
	until <-chan struct{}
	most  time.Duration
}

func (h held) Start(ctx context.Context) error {
	t := time.NewTimer(h.most)
	defer t.Stop()
	select {
	case <-h.until:
	case <-t.C:
	case <-ctx.Done():
		return nil
	}
	return h.Runnable.Start(ctx)
}

// NeedLeaderElection is the held Runnable's (controllers: true).
func (h held) NeedLeaderElection() bool {
	l, ok := h.Runnable.(manager.LeaderElectionRunnable)
	return !ok || l.NeedLeaderElection()
}

// plainHandler serves an operation with a net/http handler.
func plainHandler(h http.Handler) server.PlainHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
}

// clusterHealth is UP when the control plane answers, the caches have synced
// and, where the reconciler runs, it has brought every validator in step once.
type clusterHealth struct{ a *App }

func (h clusterHealth) Ping(ctx context.Context) error {
	// The embedded control plane is down while a child restarts.
	if h.a.Engine != nil {
		if err := engineDown(h.a.Engine.Ping(ctx)); err != nil {
			return err
		}
	}
	if err := h.a.Cluster.Ping(ctx); err != nil {
		return err
	}
	if h.a.lead.enabled && !h.a.Intent.Running() {
		return nil
	}
	return h.a.Intent.Ping(ctx)
}

// verifier trusts the configured JWKS, else the data directory's development issuer.
func (a *App) verifier(ctx context.Context) (*auth.Verifier, error) {
	roles, err := auth.ParseRoles(a.Config.RolesViewer, a.Config.RolesOperator, a.Config.RolesAdmin)
	if err != nil {
		return nil, err
	}
	if a.Config.JWKSURI != "" {
		keys, err := auth.LoadKeys(ctx, a.Config.JWKSURI, &http.Client{Timeout: 10 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("api.auth.jwksUri: %w", err)
		}
		if a.Config.Audience == "" {
			// Release 2.0 takes any token of the issuer: only an audience
			// keeps the same realm's wallet users out.
			a.Log.Warn("api.auth.audience is not set: every token the identity provider signs is accepted, including wallet users' tokens of the same realm")
		}
		return auth.NewVerifier(keys, a.Config.Issuer, a.Config.Audience).WithRoles(roles), nil
	}
	issuer, err := auth.OpenDevIssuer(a.Config.DataDir)
	if err != nil {
		return nil, err
	}
	a.Issuer = issuer
	// Development tokens carry no audience.
	return auth.NewVerifier(issuer.PublicKeys(), cmp.Or(a.Config.Issuer, auth.DevIssuerName), "").WithRoles(roles), nil
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
	if a.Upstreams != nil {
		_ = a.Upstreams.Close()
	}
	if a.Sandbox != nil {
		a.Sandbox.Close()
	}
	if a.Engine != nil {
		a.Engine.Stop() // controller manager, API server, etcd
	}
	if a.Store != nil {
		return a.Store.Close()
	}
	return nil
}
