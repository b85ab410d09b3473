// Package engine runs the Kubernetes control plane of the embedded default:
// etcd, kube-apiserver and kube-controller-manager as child processes on
// loopback, their state in one directory, so that every object survives a
// restart (docs/decisions.md, "Control plane").
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
)

// Version is the Kubernetes release `make engine` installs.
const Version = "v1.37.1"

// ServiceCIDR is the virtual range Services get addresses from: nothing
// routes it, and nothing on the embedded default may dial a ClusterIP.
const ServiceCIDR = "10.96.0.0/12"

// Binaries the engine runs, in start order.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
)

var binaries = []string{Etcd, APIServer, ControllerManager}

// Controllers is what kube-controller-manager runs: those that turn
// workloads into Pods and those they depend on. Not the node lifecycle
// controller: the simulated node would need a heartbeat to keep its Pods.
var Controllers = []string{
	"garbage-collector-controller",
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"job-controller",
	"cronjob-controller",
	"ttl-after-finished-controller",
	"serviceaccount-controller",
	"root-ca-certificate-publisher-controller",
	"namespace-controller",
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"pod-garbage-collector-controller",
}

// Options configure Start; zero values take the defaults.
type Options struct {
	// Dir holds etcd's data, the PKI, the children's logs and the key that
	// encrypts Secrets in etcd; required.
	Dir string
	// BinDir holds etcd, kube-apiserver and kube-controller-manager; default
	// $KUBEBUILDER_ASSETS, else <user cache>/validator-manager/envtest/<Version>.
	BinDir string
	// Kubeconfig, when set, is where the administrator's kubeconfig is
	// written (credentials embedded, mode 0600), e.g. DATA_DIR/kubeconfig.
	Kubeconfig string
	// StartTimeout bounds each child's wait for readiness; default 60 s.
	StartTimeout time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// RestartDelay is the first wait before a child that exited is started
	// again (supervise); default 0.5 s.
	RestartDelay time.Duration

	// plaintextSecrets starts the apiserver without encryption at rest, for
	// the tests of the migration.
	plaintextSecrets bool
}

const (
	// stableAfter is how long a run must last for backoff to start over.
	stableAfter     = time.Minute
	maxRestartDelay = 30 * time.Second
	// stopTimeout is each child's grace after SIGTERM.
	stopTimeout = 5 * time.Second
)

// DefaultBinDir is $KUBEBUILDER_ASSETS if set, else CacheDir.
func DefaultBinDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return CacheDir()
}

// CacheDir is the folder `make engine` fills.
func CacheDir() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(cache, "validator-manager", "envtest", Version)
}

// Engine is a running control plane.
type Engine struct {
	opts  Options
	log   *slog.Logger
	spawn spawner
	pki   *pki

	mu    sync.Mutex
	procs []*proc // in start order: the control plane's, then Spawn's

	cfg       *rest.Config
	apiServer string // https://127.0.0.1:<port>
	fresh     bool   // etcd had no data before this start
	ready     *http.Client
	readyAt   atomic.Int64 // Unix nanoseconds of the API server's last ready answer

	stopOnce    sync.Once
	done        chan struct{} // closed by Stop
	supervisors sync.WaitGroup
}

// proc is one supervised binary: its path, arguments, and current run.
type proc struct {
	name string
	bin  string
	args []string
	node bool // Spawn's

	mu  sync.Mutex
	cur *child
}

func (p *proc) current() *child {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// Start starts etcd, kube-apiserver and kube-controller-manager and returns
// once the API server is ready and the CRDs are established. ctx bounds the
// start only; a child that exits later is started again until Stop.
func Start(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Dir == "" {
		return nil, errors.New("engine: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	opts.Dir = dir
	opts.BinDir = cmp.Or(opts.BinDir, DefaultBinDir())
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	if opts.RestartDelay <= 0 {
		opts.RestartDelay = 500 * time.Millisecond
	}
	for _, b := range binaries {
		if fi, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("engine: %s is missing in %s: run `make engine` (it builds etcd, kube-apiserver and kube-controller-manager %s there once), or set KUBEBUILDER_ASSETS to a folder holding them",
				b, opts.BinDir, Version)
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, "logs")} {
		if err := mkdirPrivate(d); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	e := &Engine{opts: opts, log: opts.Logger, done: make(chan struct{})}
	began := time.Now()
	if killed, err := killStale(dir, append(binaries, ownBinary())); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	} else if len(killed) > 0 {
		e.log.Warn("engine: killed processes of an earlier run still using the directory", "dir", dir, "pids", killed)
	}
	if e.fresh, err = e.prepareEtcdDir(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.pki, err = openPKI(filepath.Join(dir, "pki")); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.spawn = newSpawner()
	if err := e.start(ctx); err != nil {
		e.Stop()
		return nil, fmt.Errorf("engine: %w", err)
	}
	for _, p := range e.procs {
		e.supervisors.Go(func() { e.supervise(p) })
	}
	e.log.Info("engine: ready", "apiServer", e.apiServer, "dir", dir, "kubeconfig", opts.Kubeconfig,
		"elapsed", time.Since(began).Round(time.Millisecond).String())
	return e, nil
}

func (e *Engine) start(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	p := e.pki.file
	etcdURL := "https://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "https://127.0.0.1:" + strconv.Itoa(etcdPeer)

	etcd, err := e.run(Etcd,
		"--name=embedded",
		"--data-dir="+filepath.Join(e.opts.Dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=embedded="+peerURL,
		"--cert-file="+p("etcd.crt"), "--key-file="+p("etcd.key"),
		"--client-cert-auth", "--trusted-ca-file="+p("ca.crt"),
		"--peer-cert-file="+p("etcd.crt"), "--peer-key-file="+p("etcd.key"),
		"--peer-client-cert-auth", "--peer-trusted-ca-file="+p("ca.crt"),
	)
	if err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, etcdURL+"/health", etcd, "apiserver-etcd-client"); err != nil {
		return err
	}
	if e.fresh {
		if err := atomicfile.Write(e.etcdMarker(), []byte(Version+"\n"), 0o600); err != nil {
			return err
		}
	}

	e.apiServer = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	var encryption []string
	if !e.opts.plaintextSecrets {
		file, err := e.encryptionConfig()
		if err != nil {
			return err
		}
		encryption = []string{"--encryption-provider-config=" + file}
	}
	api, err := e.run(APIServer, append(encryption,
		"--etcd-servers="+etcdURL,
		"--etcd-cafile="+p("ca.crt"), "--etcd-certfile="+p("apiserver-etcd-client.crt"), "--etcd-keyfile="+p("apiserver-etcd-client.key"),
		// Loopback only: it must start on a machine without a default
		// route, and no one but this machine's users may reach it.
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(apiPort),
		"--service-cluster-ip-range="+ServiceCIDR,
		"--tls-cert-file="+p("apiserver.crt"), "--tls-private-key-file="+p("apiserver.key"),
		"--cert-dir="+e.pki.dir,
		"--client-ca-file="+p("ca.crt"),
		"--anonymous-auth=false",
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p("sa.pub"),
		"--service-account-signing-key-file="+p("sa.key"),
		"--allow-privileged=true",
		"--profiling=false",
	)...)
	if err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, e.apiServer+"/readyz", api, "admin"); err != nil {
		return err
	}
	if e.ready, err = e.httpClient("admin"); err != nil {
		return err
	}

	kcmConfig := filepath.Join(e.opts.Dir, "controller-manager.kubeconfig")
	if err := e.writeKubeconfig(kcmConfig, "controller-manager"); err != nil {
		return err
	}
	if err := e.writeKubeconfig(e.NodeKubeconfig(), "node"); err != nil {
		return err
	}
	if _, err := e.run(ControllerManager,
		"--kubeconfig="+kcmConfig,
		"--controllers="+strings.Join(Controllers, ","),
		"--leader-elect=false",
		"--secure-port=0", // serves nothing: one listening port fewer
		"--root-ca-file="+p("ca.crt"),
		"--use-service-account-credentials=false",
		"--cluster-name=embedded",
		// Its default client rate (20/30) holds back the workload
		// controllers at a thousand validators (BenchmarkWorkloadsStarted).
		"--kube-api-qps=300", "--kube-api-burst=600",
	); err != nil {
		return err
	}

	if e.cfg, err = e.clientConfig("admin"); err != nil {
		return err
	}
	// One local client of a local server: the defaults (5/10) would
	// throttle a controller catching up after a restart.
	e.cfg.QPS, e.cfg.Burst = 200, 400
	if e.opts.Kubeconfig != "" {
		if err := e.writeKubeconfig(e.opts.Kubeconfig, "admin"); err != nil {
			return err
		}
	}
	if !e.opts.plaintextSecrets {
		if err := e.migrateSecrets(ctx); err != nil {
			return err
		}
	}
	return installCRDs(ctx, e.RESTConfig(), e.opts.StartTimeout)
}

func (e *Engine) etcdMarker() string { return filepath.Join(e.opts.Dir, "etcd.initialized") }

// prepareEtcdDir makes <Dir>/etcd, and says whether the cluster is new. Data
// without the marker is an interrupted first bootstrap, from which etcd may
// never elect itself leader: nothing was stored yet, so it is started over.
func (e *Engine) prepareEtcdDir() (fresh bool, err error) {
	data := filepath.Join(e.opts.Dir, "etcd")
	entries, _ := os.ReadDir(data)
	_, err = os.Stat(e.etcdMarker())
	switch {
	case err == nil && len(entries) > 0:
		return false, mkdirPrivate(data)
	case err == nil:
		// Emptied since: the server then checks that nothing it recorded was lost.
		e.log.Warn("engine: etcd's data directory is empty although the cluster was initialized; a new cluster starts", "dir", data)
	case !errors.Is(err, os.ErrNotExist):
		return false, err
	case len(entries) > 0:
		e.log.Warn("engine: etcd's first start did not complete; starting it over", "dir", data)
		if err := os.RemoveAll(data); err != nil {
			return false, err
		}
	}
	return true, mkdirPrivate(data)
}

// run starts a child; Start has it supervised once everything is ready.
func (e *Engine) run(name string, args ...string) (*child, error) {
	p := &proc{name: name, bin: filepath.Join(e.opts.BinDir, name), args: args}
	c, err := e.startChild(p, false)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	return c, nil
}

// nodeKubeconfig is the simulated node's kubeconfig, in Dir.
const nodeKubeconfig = "node.kubeconfig"

// NodeKubeconfig is the file of the simulated node's credentials.
func (e *Engine) NodeKubeconfig() string { return filepath.Join(e.opts.Dir, nodeKubeconfig) }

// Spawn starts bin with args as a further child of the control plane (the
// simulated node), supervised as the others are but not counted by Ping: a
// node that is down leaves the control plane up, as on a cluster.
func (e *Engine) Spawn(name, bin string, args ...string) error {
	// Under the lock Stop closes done with: a child started here is one
	// Stop stops.
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.done:
		return errors.New("engine: stopped")
	default:
	}
	p := &proc{name: name, bin: bin, args: args, node: true}
	if _, err := e.startChild(p, false); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.procs = append(e.procs, p)
	e.supervisors.Go(func() { e.supervise(p) })
	return nil
}

// ownBinary is the server's executable's name: a node Spawn started from it
// may outlive a server killed before the child's parent-death signal was set.
func ownBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Base(exe)
}

// supervise starts p again each time it exits, until Stop, with backoff.
// The ports stay the same, so that every client finds it again.
func (e *Engine) supervise(p *proc) {
	delay := e.opts.RestartDelay
	for {
		c := p.current()
		select {
		case <-e.done:
			return
		case <-c.done:
		}
		ran := time.Since(c.started)
		if ran >= stableAfter {
			delay = e.opts.RestartDelay
		}
		what := "the cluster is unavailable until it is back"
		if p.node {
			what = "no Pod changes on its node until it is back"
		}
		e.log.Error("engine: "+p.name+" exited; it is started again, and "+what,
			"process", p.name, "exit", c.status(), "ran", ran.Round(time.Millisecond).String(),
			"lastOutput", c.out.lastLines(3), "restartIn", delay.String(),
			"log", filepath.Join(e.opts.Dir, "logs", p.name+".log"))
		for {
			select {
			case <-e.done:
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, max(maxRestartDelay, e.opts.RestartDelay))
			next, err := e.startChild(p, true)
			if err != nil {
				e.log.Error("engine: "+p.name+" could not be started again", "process", p.name, "error", err.Error(), "restartIn", delay.String())
				continue
			}
			e.log.Warn("engine: "+p.name+" started again", "process", p.name, "pid", next.cmd.Process.Pid)
			break
		}
	}
}

// Ping is nil when every child of the control plane runs (Spawn's are not
// counted) and the API server, its etcd included, is ready.
func (e *Engine) Ping(ctx context.Context) error {
	if err := e.exited(); err != nil {
		return err
	}
	if err := e.askReady(ctx); err != nil {
		e.readyAt.Store(0)
		return err
	}
	e.readyAt.Store(time.Now().UnixNano())
	return nil
}

// upFor is how long Up takes the last ready answer for a present one.
const upFor = time.Second

// Up is Ping for a request that needs the control plane up, taking a ready
// answer of the last second for a present one: each /readyz costs an etcd
// round trip, which queued behind the controllers' requests under a burst.
func (e *Engine) Up(ctx context.Context) error {
	if err := e.exited(); err != nil {
		return err
	}
	if time.Since(time.Unix(0, e.readyAt.Load())) < upFor {
		return nil
	}
	return e.Ping(ctx)
}

// exited says which child has exited and is being started again, if one has.
func (e *Engine) exited() error {
	e.mu.Lock()
	procs := slices.Clone(e.procs)
	e.mu.Unlock()
	for _, p := range procs {
		if c := p.current(); !p.node && c.exited() {
			return fmt.Errorf("%s exited (%s) and is being started again", p.name, c.status())
		}
	}
	return nil
}

// askReady asks the API server's /readyz.
func (e *Engine) askReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.apiServer+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := e.ready.Do(req)
	if err != nil {
		return fmt.Errorf("kube-apiserver readiness: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kube-apiserver readiness: %s (etcd unavailable?)", resp.Status)
	}
	return nil
}

// clientConfig reaches the API server with the named client certificate.
func (e *Engine) clientConfig(client string) (*rest.Config, error) {
	cfg := &rest.Config{Host: e.apiServer, TLSClientConfig: rest.TLSClientConfig{
		CAFile:   e.pki.file("ca.crt"),
		CertFile: e.pki.file(client + ".crt"),
		KeyFile:  e.pki.file(client + ".key"),
	}}
	return cfg, rest.LoadTLSFiles(cfg)
}

// httpClient reaches the children with the named client certificate.
func (e *Engine) httpClient(client string) (*http.Client, error) {
	cfg, err := e.clientConfig(client)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 2 * time.Second
	return rest.HTTPClientFor(cfg)
}

// waitHTTP waits until url answers 200, or the child exits, or the start
// timeout passes.
func (e *Engine) waitHTTP(ctx context.Context, url string, c *child, client string) error {
	hc, err := e.httpClient(client)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, e.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		if c.exited() {
			return false, fmt.Errorf("%s exited while starting: %v (see %s)", c.name, c.err, filepath.Join(e.opts.Dir, "logs", c.name+".log"))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil && !c.exited() {
		return fmt.Errorf("%s not ready (%s, last answer: %s; see %s): %w", c.name, url, last, filepath.Join(e.opts.Dir, "logs", c.name+".log"), err)
	}
	return err
}

// RESTConfig is the administrator's client configuration of the API server
// (a copy: callers may change it).
func (e *Engine) RESTConfig() *rest.Config { return rest.CopyConfig(e.cfg) }

// Fresh says whether etcd's data directory was empty before this start: a
// new cluster, where first-run objects (a sample) may be created.
func (e *Engine) Fresh() bool { return e.fresh }

// Abandon marks a fresh cluster as one not to keep, so that the next start
// finds it fresh again.
func (e *Engine) Abandon() error {
	if !e.fresh {
		return errors.New("engine: only a fresh cluster may be abandoned")
	}
	if err := os.Remove(e.etcdMarker()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Host is the API server's URL, https://127.0.0.1:<port>.
func (e *Engine) Host() string { return e.apiServer }

// Stop stops the children in the reverse order of their start, each given
// stopTimeout after SIGTERM. Safe to call more than once.
func (e *Engine) Stop() {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		close(e.done) // exits from here on are expected; Spawn refuses
		procs := e.procs
		e.mu.Unlock()
		e.supervisors.Wait()
		for i := len(procs) - 1; i >= 0; i-- {
			if err := procs[i].current().stop(stopTimeout); err != nil {
				e.log.Warn("engine: " + err.Error())
			}
		}
		close(e.spawn)
		e.log.Info("engine: stopped", "dir", e.opts.Dir)
	})
}

// freePorts reserves n distinct loopback ports for the children to bind.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free loopback port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// writeKubeconfig writes a kubeconfig with the named client certificate,
// embedded so that the file works from any directory.
func (e *Engine) writeKubeconfig(file, user string) error {
	c, err := e.clientConfig(user)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["embedded"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData}
	cfg.Contexts["embedded"] = &clientcmdapi.Context{Cluster: "embedded", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "embedded"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(file, b, 0o600)
}
