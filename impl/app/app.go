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
	// Intent keeps the identity provider and the cluster in step with the
	// database.
	Intent *intent.Controller
	// Engine is the embedded default's control plane (cluster.mode
	// embedded); nil otherwise. Its simulated node runs as its child
	// process (startNode), whose pod metrics nodeMetrics reaches.
	Engine      *engine.Engine
	nodeMetrics string
	// Nodes is the simulated node run in this process, on a control plane
	// shared by tests (WithControlPlane); nil otherwise.
	Nodes *nodesim.Simulator
	// rest reaches the API server: the controllers' manager is built on it.
	rest *rest.Config
	// mgr is the controller-runtime Manager: its cache is the one the
	// gateway and every controller read.
	mgr manager.Manager
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
	// Upstreams reaches validators' nodes; its admin API connections are closed by Close.
	Upstreams *upstream.Clients
	// watch feeds the watch streams of both releases from the Manager's
	// cache (watch.go).
	watch *watchFeed

	// lead is this replica's part in the leader election.
	lead leadership
	// opts are Open's options, for the parts Run builds.
	opts []Option
	// installation is the database's instance id, which every store of the
	// data directory records; expected says the database holds validators,
	// so the stores that keep their data must exist.
	installation string
	expected     bool
	// workload are the workload controller's options (openWorkload).
	workload workload.Options
	// charts is the chart renderer in chart mode (splice.charts), else nil.
	charts *charts.Renderer
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

// WithManagement edits release 1.11's parts before its server is built.
func WithManagement(f func(*management.Options)) Option { return Option{f} }

// WithIntent edits the intent controller's parts before it is built.
func WithIntent(f func(*intent.Options)) Option { return Option{f} }

// WithServer edits the HTTP server's parts before it is built.
func WithServer(f func(*server.Options)) Option { return Option{f} }

// WithManager edits the controller-runtime Manager's options before Open
// builds it (tests running two replicas in one process skip its
// controller-name check).
func WithManager(f func(*manager.Options)) Option { return Option{f} }

// WithWorkload edits the workload controller's options before Open builds
// the Manager's cache (which sees the release namespaces when the
// controller has a Renderer, the chart renderer in chart mode): tests give
// a Renderer of their own.
func WithWorkload(f func(*workload.Options)) Option { return Option{f} }

// WithControlPlane makes the embedded default use the running control
// plane of rc rather than start its own in the data directory: a test
// process shares one among its servers, each in a namespace of its own
// with a simulated node of its own. The production binary starts its own.
func WithControlPlane(rc *rest.Config) Option {
	return Option{func(p **rest.Config) { *p = rc }}
}

// apiDocs is both releases' descriptions and page, rendered once per process
// from the contracts the servers share: nothing changes either after.
var apiDocs = sync.OnceValues(func() (*docs.Docs, error) {
	mgmt, plat, err := server.Contracts()
	if err != nil {
		return nil, err
	}
	return docs.New(plat, mgmt)
})

// Open builds the process without starting anything; Run serves and runs
// its background work.
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
	// The controllers' work queues and reconciles, and the client's
	// requests to the API server (rate limits are sized by them).
	a.Telemetry.Also(ctrlmetrics.Registry)
	ctrlmetrics.RegisterRESTClientMetrics(ctrlmetrics.MetricRateLimiterLatency)
	mo := management.Options{
		Store:     a.Store,
		Cluster:   a.managementCluster(),
		Intent:    a.Intent,
		Namespace: cfg.Namespace,
		Logger:    log,
		// The outbound address policy (outbound.go).
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
	a.watch = newWatchFeed(a.installation)
	plat := platform.New(platform.Options{
		Health:  a.health(),
		Version: version,
		Docs:    d,
		// Release 2.0's Validator/Application reads and application metrics,
		// and its upstream proxy.
		Resources: a.Cluster,
		Upstreams: ups,
		Logger:    log,
		// The wallet gateway's record and the ledger console.
		Gateway: a.Store,
		Keys:    a.Cluster,
		Console: console,
		Leader:  a.leaderHealthFunc(),
		Audit:   a.Store,
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
		Docs:           d,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		MaxUploadBytes: cfg.MaxUploadBytes,
		RequestTimeout: cfg.RequestTimeout,
		// Robustness against slow or oversized requests.
		BodyReadTimeout: cfg.BodyReadTimeout,
		UploadTimeout:   cfg.UpstreamTimeout,
		MaxHeaderBytes:  int(cfg.MaxHeaderBytes),
		// Operational metrics and the audit log of mutating calls.
		Metrics: a.Telemetry,
		Audit:   a.Store,
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
// (datadir.go), makes the installation id and connects the cluster
// gateway; on the embedded default it starts the control plane first,
// whose etcd records the installation too.
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

// Client rate limits of the process's one rest.Config (the Manager's
// client, the gateway, the embedded default's parts): client-go's default
// (QPS 5, burst 10; controller-runtime's 20/30) is a wall for a controller
// that writes some 8 objects per validator: 311 creates in a minute need
// about 40 writes a second, a restart of 10,000 validators lists and
// watches a handful of kinds once and writes nothing. 200/400 leave the
// API server's own limits (400 requests in flight, 200 mutating, by
// default) as the bound (docs/decisions.md).
const (
	clientQPS   = 200
	clientBurst = 400
	// intentWorkers reconcile different validators at once: each spends
	// most of its time waiting for the API server or the database.
	intentWorkers = 8
	// workloadWorkers likewise: a validator's reconcile is some ten applies
	// in a row, each a round trip to the API server, so one worker
	// provisioned about two validators a second (docs/benchmarks.md).
	workloadWorkers = 8
	// resync re-delivers every cached object this often (the intent
	// controller then looks again at each managed validator).
	resync = 10 * time.Minute
)

// onThisMachine tells whether the API server at host (a rest.Config's)
// answers on the loopback interface, as the embedded default's does. Its
// answers are then not compressed: over loopback gzip saves nothing and
// costs both ends CPU (a tenth of the server's during a restart's lists,
// docs/benchmarks.md).
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

// openManager builds the controller-runtime Manager (nothing starts until
// Run) and the cluster gateway over its cache: one cache of the cluster's
// objects for the gateway and every controller, started and stopped by
// the Manager.
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
		// A leader that stops releases the Lease, so the next one takes
		// over at once; a leader that loses it makes Start fail (and the
		// process exit) without a graceful shutdown: controller-runtime's
		// rule, kept (docs/decisions.md).
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
		// The simulated node's process serves metrics.k8s.io's wire
		// format: the client a cluster's metrics-server is read with.
		mc, err := metricsclient.NewForConfig(&rest.Config{Host: a.nodeMetrics, Timeout: probeTimeout, UserAgent: "validator-manager"})
		if err != nil {
			return err
		}
		ko.Metrics = mc.MetricsV1beta1()
	}
	a.Cluster, err = cluster.NewKube(a.mgr, a.Config.Namespace, ko)
	return err
}

// Manager is the process's controller-runtime Manager (Run starts it;
// tests that assemble the process by hand start it themselves).
func (a *App) Manager() manager.Manager { return a.mgr }

// startEngine starts the embedded default's control plane in the data
// directory (etcd's data there, so everything survives a restart; the
// administrator's kubeconfig at dataDir/kubeconfig), or takes the shared
// one of WithControlPlane, and its simulated node: a child process of the
// control plane (startNode), or on a shared one a Runnable of this process.
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
		// A shared control plane: this server's node and simulated pods are
		// its namespace's only.
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

// startNode starts the simulated node as a child process of the control
// plane, which supervises it (restarts it if it exits, stops it first,
// kills it with the server): this binary re-executed as `nodesim`, as a
// kubelet runs beside a cluster's control plane rather than inside the
// server, so that its caches and work are not the server's.
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

// uis are where browsers reach the validators' UIs (ui.publicUrl), which
// their identity-provider clients are given.
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

// StartCluster waits, until ctx ends, for the first sync of the Manager's
// cache (the Manager starts it) and the informers the gateway reads. It fails
// fast when the cluster does not serve the Validator resource.
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

// Run serves on ln and runs every piece of background work as Runnables of
// one Manager (built by Open) until ctx ends or one of them fails: the HTTP
// server, the one cache, the controllers, the remote-participant probes, the
// refresh of stale list views and, on the embedded default, its simulated
// node. It returns once all of them have returned, so Close may then
// release the control plane and the store.
//
// extra are the caller's own Runnables (the profiling listener).
func (a *App) Run(ctx context.Context, ln net.Listener, extra ...manager.Runnable) error {
	mgr, err := a.manager(ln)
	if err != nil {
		return err
	}
	for _, r := range extra {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// manager adds every long-running part as a Runnable of the one
// controller-runtime Manager, which starts them together and stops them in
// order: the HTTP server first (it stops taking requests), then the
// controllers, schedules and probes (they drain), then the cache.
func (a *App) manager(ln net.Listener) (manager.Manager, error) {
	mgr := a.mgr
	served := make(chan struct{}) // the API server has stopped
	runnables := []manager.Runnable{
		// Not leader-elected, on every replica: the API and the gateway's
		// caches its reads come from. They stop before the controllers.
		runnable(false, func(ctx context.Context) error {
			defer close(served)
			return a.Server.Serve(ctx, ln, a.Config.ShutdownTimeout)
		}),
		runnable(false, a.runCluster),
		// The watch streams, from the Manager's cache; they end before the
		// HTTP server's shutdown gives up waiting for them.
		runnable(false, func(ctx context.Context) error { return a.RunWatch(ctx, a.mgr.GetCache()) }),
		// The schedules and one-off rewrites: the leader's (the
		// controllers are too, controller-runtime's default).
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
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	// The workload controller starts (and lists every Pod, Deployment,
	// StatefulSet and Service) once the intent controller is in step, so
	// that at a restart those lists do not compete with what the server
	// needs to be ready for: at 1,000 validators they are most of the
	// API server's and the server's work then.
	held := heldBack{Manager: mgr, until: a.Intent.InStep(), most: workloadHold}
	if err := workload.New(a.workload).SetupWithManager(held); err != nil {
		return nil, fmt.Errorf("workload controller: %w", err)
	}
	if err := runs.New(a.Store).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("run controller: %w", err)
	}
	return mgr, nil
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

// runCluster waits for the cache and the informers the gateway reads
// (StartCluster); health is DOWN until then.
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

// refreshListViews rewrites stale list views once. Lists are right without
// it (a stale view is rendered on read); a failure is logged and the next
// start tries again.
func (a *App) refreshListViews(ctx context.Context) error {
	if err := a.Management.RefreshListViews(ctx); err != nil && ctx.Err() == nil {
		a.Log.WarnContext(ctx, "refreshing the validators' list views", "error", err)
	}
	return nil
}

// runnable is a Runnable of the Manager; leader tells whether only the
// elected replica may run it (with leader election off, every process is).
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

// clusterHealth is UP when the embedded control plane (if any) runs, the
// cluster answers, the gateway's caches have synced and, where the
// reconciler runs (the leader, or the one process), it has brought every
// validator in step once. A follower does not wait for
// a reconciler it does not run.
type clusterHealth struct{ a *App }

func (h clusterHealth) Ping(ctx context.Context) error {
	// The embedded control plane is down while a child exited and is
	// being started again, or the API server is not ready (etcd away).
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

// verifier trusts the configured JWKS, or the development issuer of the data
// directory when none is configured.
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
			// Release 2.0 says any token of the issuer may call every
			// endpoint; where the same realm also issues tokens to wallet
			// users, an audience is what keeps them out.
			a.Log.Warn("api.auth.audience is not set: every token the identity provider signs is accepted, including wallet users' tokens of the same realm")
		}
		return auth.NewVerifier(keys, a.Config.Issuer, a.Config.Audience).WithRoles(roles), nil
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
	return auth.NewVerifier(issuer.PublicKeys(), iss, "").WithRoles(roles), nil
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
