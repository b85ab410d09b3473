// Package config loads validator-manager's settings. Every setting has one
// key (as in the API documents: api.namespace, api.auth.jwksUri, ...) that a
// YAML file, an environment variable and a flag all carry:
//
//	YAML  api: {auth: {jwksUri: https://...}}
//	env   VM_API_AUTH_JWKS_URI=https://...
//	flag  --api.auth.jwks-uri=https://...
//
// Later sources win: defaults, then the file, then the environment, then flags.
package config

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/validator-manager/validator-manager/impl/idp"
)

// Cluster modes.
const (
	// ClusterEmbedded is the control plane the server starts on loopback
	// (impl/embedded/engine), with a simulated node.
	ClusterEmbedded   = "embedded"
	ClusterKubeconfig = "kubeconfig"
	ClusterInCluster  = "in-cluster"
)

// Identity provider modes.
const (
	IdentityLocal    = "local"
	IdentityKeycloak = "keycloak"
)

// Config is the whole configuration of one server process; settings() says
// what each field means.
type Config struct {
	Listen  string
	DataDir string

	DatabaseDSN             string
	DatabaseMaxOpenConns    int64
	DatabaseMaxIdleConns    int64
	DatabaseConnMaxLifetime time.Duration
	DatabaseConnMaxIdleTime time.Duration

	Namespace         string
	JWKSURI           string
	Issuer            string
	Audience          string
	IngressMiddleware string
	MetricsPublic     bool
	// Roles from token claims (impl/auth.ParseRoles).
	RolesViewer, RolesOperator, RolesAdmin string
	AuditRetention                         time.Duration

	// The outbound address policy (impl/outbound).
	OutboundAllowedHosts string
	OutboundAllowHTTP    bool
	OutboundAllowPrivate bool

	ClusterMode string
	Kubeconfig  string
	// The room of the embedded default's simulated node.
	NodeCPU    string
	NodeMemory string
	NodePods   int64

	IdentityMode         string
	KeycloakURL          string
	KeycloakPublicURL    string
	KeycloakRealm        string
	KeycloakClientID     string
	KeycloakClientSecret string
	UIPublicURL          string // idp.UIs.Template

	RequestTimeout  time.Duration
	ShutdownTimeout time.Duration
	MaxBodyBytes    int64
	MaxUploadBytes  int64
	BodyReadTimeout time.Duration
	MaxHeaderBytes  int64
	TokenTTL        time.Duration
	LogLevel        string
	PprofListen     string

	// Upstream calls of release 2.0 (ledger, scan, validator app).
	UpstreamTimeout     time.Duration
	ConsoleIdleTimeout  time.Duration
	UpstreamTokenURL    string
	UpstreamAdminTLS    bool
	UpstreamAdminCAFile string

	LeaderElection                bool
	LeaderElectionID              string
	LeaderElectionIdentity        string
	LeaderElectionLeaseDuration   time.Duration
	LeaderElectionRenewDeadline   time.Duration
	LeaderElectionRetryPeriod     time.Duration
	LeaderElectionReleaseOnCancel bool

	SpliceCharts      string
	SpliceChartValues string

	StartAfresh string // AfreshStores, comma-separated
}

// The stores of the data directory an operator may start afresh.
const (
	StoreIdentity = "idp"
	StoreSandbox  = "sandbox"
	StoreCluster  = "cluster"
)

// AfreshStores are the values startAfresh accepts.
var AfreshStores = []string{StoreIdentity, StoreSandbox, StoreCluster}

// Afresh tells whether startAfresh names store.
func (c Config) Afresh(store string) bool {
	return slices.ContainsFunc(strings.Split(c.StartAfresh, ","), func(s string) bool { return strings.TrimSpace(s) == store })
}

// Default is the embedded default: everything local, in ./data.
func Default() Config {
	return Config{
		Listen:          "127.0.0.1:8080",
		DataDir:         "data",
		Namespace:       "default",
		ClusterMode:     ClusterEmbedded,
		NodeCPU:         "64",
		NodeMemory:      "256Gi",
		NodePods:        10000,
		IdentityMode:    IdentityLocal,
		KeycloakRealm:   "master",
		RequestTimeout:  60 * time.Second,
		ShutdownTimeout: 15 * time.Second,
		MaxBodyBytes:    1 << 20,
		MaxUploadBytes:  512 << 20,
		BodyReadTimeout: 30 * time.Second,
		MaxHeaderBytes:  64 << 10,
		TokenTTL:        12 * time.Hour,
		LogLevel:        "info",
		AuditRetention:  90 * 24 * time.Hour,
		// As many idle as open connections, so a burst reuses them; recycled
		// so that a failover or a pooler's limits are picked up.
		DatabaseMaxOpenConns:    10,
		DatabaseMaxIdleConns:    10,
		DatabaseConnMaxLifetime: 30 * time.Minute,
		DatabaseConnMaxIdleTime: 10 * time.Minute,
		UpstreamTimeout:         30 * time.Second,
		ConsoleIdleTimeout:      15 * time.Minute,
		// client-go's and controller-runtime's defaults.
		LeaderElection:                true,
		LeaderElectionID:              "validator-manager",
		LeaderElectionLeaseDuration:   15 * time.Second,
		LeaderElectionRenewDeadline:   10 * time.Second,
		LeaderElectionRetryPeriod:     2 * time.Second,
		LeaderElectionReleaseOnCancel: true,
	}
}

type setting struct {
	key   string
	usage string
	ptr   any // *string, *int64, *bool or *time.Duration
	// secret settings have no flag: a command line shows in ps.
	secret bool
}

func (c *Config) settings() []setting {
	return []setting{
		{"listen", "address the HTTP server listens on", &c.Listen, false},
		{"dataDir", "directory of the embedded default (SQLite database, control plane, development signing key)", &c.DataDir, false},
		{"database.dsn", "database: a PostgreSQL DSN (postgres://... or host=...) or a SQLite file path; empty = SQLite in dataDir", &c.DatabaseDSN, true},
		{"database.maxOpenConns", "largest number of open database connections (0 = no limit)", &c.DatabaseMaxOpenConns, false},
		{"database.maxIdleConns", "idle database connections kept for reuse", &c.DatabaseMaxIdleConns, false},
		{"database.connMaxLifetime", "a database connection is closed after this long (0 = never)", &c.DatabaseConnMaxLifetime, false},
		{"database.connMaxIdleTime", "an idle database connection is closed after this long (0 = never)", &c.DatabaseConnMaxIdleTime, false},
		{"api.namespace", "the single Kubernetes namespace the API works on", &c.Namespace, false},
		{"api.auth.jwksUri", "JWKS that verifies bearer tokens: an http(s) URL or a file path; empty = the development token issuer in dataDir", &c.JWKSURI, false},
		{"api.auth.issuer", "when set, tokens must carry this iss claim", &c.Issuer, false},
		{"api.auth.audience", "when set, tokens must name this audience (aud claim)", &c.Audience, false},
		{"api.auth.roles.viewer", "token claims that make a viewer (every read but identity-dump), comma-separated: realm:<role>, client:<clientId>/<role>, group:<group>, scope:<scope>; all three role lists empty = roles off (any valid token may call everything)", &c.RolesViewer, false},
		{"api.auth.roles.operator", "token claims that make an operator (viewer plus every write), as api.auth.roles.viewer", &c.RolesOperator, false},
		{"api.auth.roles.admin", "token claims that make an admin (everything: identity-dump, ledger console, wallet gateway credentials, audit log), as api.auth.roles.viewer", &c.RolesAdmin, false},
		{"audit.retention", "how long audit log entries are kept (the leader purges older ones hourly); 0 = forever", &c.AuditRetention, false},
		{"api.ingress.middlewares", "ingress middlewares in front of the documentation paths (used by the Helm chart)", &c.IngressMiddleware, false},
		{"api.metrics.public", "serve /actuator/prometheus without a bearer token (for a scraper inside the cluster)", &c.MetricsPublic, false},
		{"cluster.mode", "cluster: embedded (a control plane the server runs in dataDir), kubeconfig, in-cluster", &c.ClusterMode, false},
		{"cluster.kubeconfig", "kubeconfig file for cluster.mode=kubeconfig", &c.Kubeconfig, false},
		{"cluster.node.cpu", "CPUs the embedded default's one simulated node offers its Pods' requests (a quantity: 64, 1500m); a Pod that does not fit stays Pending, Insufficient cpu", &c.NodeCPU, false},
		{"cluster.node.memory", "memory the embedded default's simulated node offers its Pods' requests (a quantity: 256Gi); a Pod that does not fit stays Pending, Insufficient memory", &c.NodeMemory, false},
		{"cluster.node.pods", "Pods the embedded default's simulated node runs at most; one more stays Pending, Too many pods", &c.NodePods, false},
		{"idp.mode", "identity provider for wallet users: local or keycloak", &c.IdentityMode, false},
		{"idp.keycloak.url", "Keycloak base URL", &c.KeycloakURL, false},
		{"idp.keycloak.publicUrl", "Keycloak base URL as validators' pods reach it (their JWKS, OIDC and token URLs); empty = idp.keycloak.url", &c.KeycloakPublicURL, false},
		{"idp.keycloak.realm", "Keycloak realm of the wallet users", &c.KeycloakRealm, false},
		{"idp.keycloak.clientId", "Keycloak admin client id (client credentials)", &c.KeycloakClientID, false},
		{"idp.keycloak.clientSecret", "Keycloak admin client secret", &c.KeycloakClientSecret, true},
		{"ui.publicUrl", "base URL where browsers reach a validator's wallet and name-service UIs, with {validator} (its name) and {ui} (wallet or ans) in it, e.g. https://{ui}.{validator}.example.com: their identity-provider clients get <URL>/* as redirect URI and its origin as web origin; empty = the UIs' in-cluster services, http://<validator>-wallet-web-ui.<namespace>.svc.cluster.local and -ans-web-ui", &c.UIPublicURL, false},
		{"server.requestTimeout", "deadline of one API request (streams excepted)", &c.RequestTimeout, false},
		{"server.shutdownTimeout", "how long shutdown waits for requests in flight", &c.ShutdownTimeout, false},
		{"server.maxBodyBytes", "largest JSON request body", &c.MaxBodyBytes, false},
		{"server.maxUploadBytes", "largest upload (DAR packages)", &c.MaxUploadBytes, false},
		{"server.bodyReadTimeout", "longest wait for the next bytes of a request body; a slower client is disconnected", &c.BodyReadTimeout, false},
		{"server.maxHeaderBytes", "largest request line and headers (431 beyond)", &c.MaxHeaderBytes, false},
		{"server.pprofListen", "loopback address (127.0.0.1:6060) of a Go profiling listener (net/http/pprof); empty = off", &c.PprofListen, false},
		{"token.ttl", "lifetime of development tokens", &c.TokenTTL, false},
		{"log.level", "debug, info, warn or error", &c.LogLevel, false},
		{"outbound.allowedHosts", "hosts the server may dial on a caller's behalf besides the defaults (comma-separated names, *.suffix patterns, IPs or CIDRs): scan, token endpoints, remote participants", &c.OutboundAllowedHosts, false},
		{"outbound.allowHttp", "allow plain http to allowed hosts outside the namespace (in a cluster https is required otherwise)", &c.OutboundAllowHTTP, false},
		{"outbound.allowPrivate", "allow loopback, link-local and cloud metadata addresses (refused otherwise unless listed as an IP or CIDR)", &c.OutboundAllowPrivate, false},
		{"upstream.timeout", "deadline of one call to a validator's ledger API, scan or validator app (502 beyond)", &c.UpstreamTimeout, false},
		{"leaderElection.enabled", "elect one leader among replicas with a Lease in api.namespace: only the leader runs the controllers, schedules and probes, every replica serves the API (ignored on the embedded default, which runs one process)", &c.LeaderElection, false},
		{"leaderElection.leaseName", "name of the Lease the replicas compete for", &c.LeaderElectionID, false},
		{"leaderElection.identity", "this replica's name in the Lease; empty = POD_NAME, else the hostname, with a random suffix", &c.LeaderElectionIdentity, false},
		{"leaderElection.leaseDuration", "how long followers wait after the leader's last renewal before taking over (the failover time after a crash)", &c.LeaderElectionLeaseDuration, false},
		{"leaderElection.renewDeadline", "how long the leader retries renewing before it gives up leading (and the process exits)", &c.LeaderElectionRenewDeadline, false},
		{"leaderElection.retryPeriod", "how often replicas try to acquire or renew the Lease", &c.LeaderElectionRetryPeriod, false},
		{"leaderElection.releaseOnCancel", "a leader that shuts down releases the Lease, so a follower takes over within retryPeriod instead of leaseDuration", &c.LeaderElectionReleaseOnCancel, false},
		{"console.idleTimeout", "closes a ledger console session with neither input nor output for this long", &c.ConsoleIdleTimeout, false},
		{"upstream.adminTls", "dial the participants' admin APIs (gRPC) over TLS; plaintext otherwise", &c.UpstreamAdminTLS, false},
		{"upstream.adminCaFile", "PEM file of the certificate authorities that sign the admin APIs' certificates (with upstream.adminTls); empty = the system's", &c.UpstreamAdminCAFile, false},
		{"startAfresh", "stores of dataDir that may start empty when start-up refuses them as missing, damaged or another installation's (comma-separated: idp, sandbox, cluster); their files are set aside, not deleted", &c.StartAfresh, false},
		{"splice.charts", "chart mode: the OCI repository prefix of Splice's Helm charts (oci://ghcr.io/digital-asset/decentralized-canton-sync/helm); a validator is then its splice-participant and splice-validator charts at the version of its imageTag, pulled, verified by digest, cached in dataDir and rendered by the server, in a namespace of its own; a registry on a loopback address is spoken to over plain HTTP; empty = the built-in layout", &c.SpliceCharts, false},
		{"splice.chartValues", "chart mode: a YAML file of Helm values for Splice's charts that the API does not model (a key per chart: splice-participant, splice-validator); a Validator's spec.chartValues override them, the values derived from the API override both where deploy/README.md says", &c.SpliceChartValues, false},
		{"upstream.tokenUrl", "OAuth2 token endpoint for the validators' ledger API clients (client-credentials grant) when a validator names no oidcAuthorityUrl; ignored on the embedded default, whose sandbox network has its own", &c.UpstreamTokenURL, false},
	}
}

// FlagName is the flag of a key: api.auth.jwksUri -> api.auth.jwks-uri.
func FlagName(key string) string {
	var b strings.Builder
	for i, r := range key {
		if unicode.IsUpper(r) && i > 0 && key[i-1] != '.' {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// EnvName is the environment variable of a key: api.auth.jwksUri -> VM_API_AUTH_JWKS_URI.
func EnvName(key string) string {
	return "VM_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(FlagName(key)))
}

// RegisterFlags adds one flag per key to fs, with the defaults of Default():
// every key's, or only those of keys (a command that reads few settings).
func RegisterFlags(fs *pflag.FlagSet, keys ...string) {
	def := Default()
	for _, s := range def.settings() {
		if s.secret || len(keys) > 0 && !slices.Contains(keys, s.key) {
			continue
		}
		usage := s.usage + " (env " + EnvName(s.key) + ")"
		switch p := s.ptr.(type) {
		case *string:
			fs.String(FlagName(s.key), *p, usage)
		case *int64:
			fs.Int64(FlagName(s.key), *p, usage)
		case *bool:
			fs.Bool(FlagName(s.key), *p, usage)
		case *time.Duration:
			fs.Duration(FlagName(s.key), *p, usage)
		}
	}
	fs.String("config", "", "optional YAML configuration file (env VM_CONFIG)")
}

// Load builds the configuration from defaults, the YAML file named by
// --config or VM_CONFIG, the environment and the flags that were set.
func Load(fs *pflag.FlagSet, getenv func(string) string) (Config, error) {
	cfg := Default()
	file := getenv("VM_CONFIG")
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && f.Changed {
			file = f.Value.String()
		}
	}
	if file != "" {
		if err := cfg.loadFile(file); err != nil {
			return Config{}, err
		}
	}
	for _, s := range cfg.settings() {
		if v := getenv(EnvName(s.key)); v != "" {
			if err := set(s, v); err != nil {
				return Config{}, fmt.Errorf("%s: %w", EnvName(s.key), err)
			}
		}
		if fs == nil {
			continue
		}
		if f := fs.Lookup(FlagName(s.key)); f != nil && f.Changed {
			if err := set(s, f.Value.String()); err != nil {
				return Config{}, fmt.Errorf("--%s: %w", f.Name, err)
			}
		}
	}
	return cfg, cfg.validate()
}

func (c *Config) loadFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("config file %s: %w", path, syntaxError(raw, err))
	}
	flat := map[string]leaf{}
	if len(doc.Content) > 0 {
		if err := flatten("", doc.Content[0], flat); err != nil {
			return fmt.Errorf("config file %s: %w", path, err)
		}
	}
	byKey := map[string]setting{}
	for _, s := range c.settings() {
		byKey[s.key] = s
	}
	keys := slices.SortedFunc(maps.Keys(flat), func(a, b string) int { return cmp.Compare(flat[a].line, flat[b].line) })
	var unknown []string
	for _, k := range keys {
		if _, ok := byKey[k]; !ok {
			u := fmt.Sprintf("line %d: %q", flat[k].line, k)
			if near := Nearest(k, Keys()); near != "" {
				u += fmt.Sprintf(" (did you mean %q?)", near)
			}
			unknown = append(unknown, u)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("config file %s: unknown keys: %s (known keys: %s)", path, strings.Join(unknown, ", "), strings.Join(Keys(), ", "))
	}
	for _, k := range keys {
		if flat[k].null {
			continue // written without a value: not set here
		}
		if err := set(byKey[k], flat[k].value); err != nil {
			return fmt.Errorf("config file %s: line %d: %s: %w", path, flat[k].line, k, err)
		}
	}
	return nil
}

// leaf is one key's value in a configuration file and the line it is on;
// null when the key has none (null, ~ or nothing), which leaves it unset.
type leaf struct {
	value string
	line  int
	null  bool
}

// syntaxError names the first line whose prefix of the file no longer parses:
// yaml.v3 names where the enclosing block starts, often lines above the mistake.
func syntaxError(raw []byte, err error) error {
	lines := strings.SplitAfter(string(raw), "\n")
	for n := 1; n <= len(lines); n++ {
		var probe yaml.Node
		if perr := yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &probe); perr != nil {
			msg := strings.TrimPrefix(perr.Error(), "yaml: ")
			if _, after, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "line ") {
				msg = after
			}
			return fmt.Errorf("line %d: %s: %q", n, msg, strings.TrimRight(lines[n-1], "\r\n"))
		}
	}
	return err
}

// flatten collects the leaves of a mapping node under dotted keys.
func flatten(prefix string, n *yaml.Node, out map[string]leaf) error {
	if n.Kind != yaml.MappingNode { // the document's root: nested mappings only recurse
		return fmt.Errorf("line %d: the file must be a mapping of keys (listen: ..., api: {...})", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if prefix != "" {
			key = prefix + "." + k.Value
		}
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if v.Kind == yaml.MappingNode {
			if err := flatten(key, v, out); err != nil {
				return err
			}
			continue
		}
		if prev, ok := out[key]; ok {
			return fmt.Errorf("line %d: %s: given twice (first on line %d)", k.Line, key, prev.line)
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: want a single value, got a list", v.Line, key)
		}
		out[key] = leaf{value: v.Value, line: k.Line, null: v.ShortTag() == "!!null"}
	}
	return nil
}

// Keys lists every key, in the order of the documentation.
func Keys() []string {
	var c Config
	var out []string
	for _, s := range c.settings() {
		out = append(out, s.key)
	}
	return out
}

// OtherEnv are VM_ variables that are no configuration key but that commands
// read (recover's token and wallet password, the configuration file).
var OtherEnv = []string{"VM_CONFIG", "VM_TOKEN", "VM_WALLET_PASSWORD"}

// UnknownEnv lists the VM_ variables of environ (KEY=value lines) that name
// no key: most likely a misspelling, which would otherwise be ignored.
func UnknownEnv(environ []string) []string {
	known := map[string]bool{}
	for _, k := range Keys() {
		known[EnvName(k)] = true
	}
	for _, k := range OtherEnv {
		known[k] = true
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "VM_") && !known[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func set(s setting, v string) error {
	switch p := s.ptr.(type) {
	case *string:
		*p = v
	case *int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		*p = n
	case *bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not a boolean (true or false): %q", v)
		}
		*p = b
	case *time.Duration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not a duration: %q", v)
		}
		*p = d
	}
	return nil
}

// ChartMode tells whether validators are Splice's charts (splice.charts).
func (c Config) ChartMode() bool { return c.SpliceCharts != "" }

// EmbeddedDefault tells whether the cluster is the one the server runs
// itself, whose validators' nodes are the sandbox network's.
func (c Config) EmbeddedDefault() bool {
	return c.ClusterMode == ClusterEmbedded
}

// LeaderElectionEnabled tells whether replicas elect a leader: configured on,
// and not the embedded default (one process, its own control plane).
func (c Config) LeaderElectionEnabled() bool {
	return c.LeaderElection && !c.EmbeddedDefault()
}

func (c *Config) validate() error {
	switch c.ClusterMode {
	case ClusterEmbedded, ClusterKubeconfig, ClusterInCluster:
	default:
		return fmt.Errorf("cluster.mode: %q is not one of embedded, kubeconfig, in-cluster", c.ClusterMode)
	}
	switch c.IdentityMode {
	case IdentityLocal, IdentityKeycloak:
	default:
		return fmt.Errorf("idp.mode: %q is not one of local, keycloak", c.IdentityMode)
	}
	if c.Namespace == "" {
		return fmt.Errorf("api.namespace: must not be empty")
	}
	if err := idp.CheckUITemplate(c.UIPublicURL); err != nil {
		return fmt.Errorf("ui.publicUrl: %w", err)
	}
	if c.MaxBodyBytes <= 0 || c.MaxUploadBytes <= 0 || c.MaxHeaderBytes <= 0 {
		return fmt.Errorf("server.maxBodyBytes, server.maxUploadBytes and server.maxHeaderBytes must be positive")
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q is not one of debug, info, warn, error", c.LogLevel)
	}
	if c.BodyReadTimeout <= 0 {
		return fmt.Errorf("server.bodyReadTimeout: must be positive")
	}
	if c.DatabaseMaxOpenConns < 0 || c.DatabaseMaxIdleConns < 0 || c.DatabaseConnMaxLifetime < 0 || c.DatabaseConnMaxIdleTime < 0 {
		return fmt.Errorf("database.maxOpenConns, maxIdleConns, connMaxLifetime and connMaxIdleTime must not be negative")
	}
	if c.LeaderElectionEnabled() {
		if c.LeaderElectionID == "" {
			return fmt.Errorf("leaderElection.leaseName: must not be empty")
		}
		if c.LeaderElectionRetryPeriod <= 0 || c.LeaderElectionRenewDeadline <= c.LeaderElectionRetryPeriod || c.LeaderElectionLeaseDuration <= c.LeaderElectionRenewDeadline {
			return fmt.Errorf("leaderElection: need 0 < retryPeriod (%s) < renewDeadline (%s) < leaseDuration (%s)", c.LeaderElectionRetryPeriod, c.LeaderElectionRenewDeadline, c.LeaderElectionLeaseDuration)
		}
	}
	// Chart mode: an oci:// prefix naming a host, and values only with it.
	host, _, _ := strings.Cut(strings.TrimPrefix(c.SpliceCharts, "oci://"), "/")
	switch {
	case c.SpliceCharts == "" && c.SpliceChartValues != "":
		return fmt.Errorf("splice.chartValues: set without splice.charts (chart mode is off)")
	case c.SpliceCharts != "" && (!strings.HasPrefix(c.SpliceCharts, "oci://") || host == ""):
		return fmt.Errorf("splice.charts: %q is not an OCI repository prefix (oci://host/path)", c.SpliceCharts)
	}
	if c.PprofListen != "" && !Loopback(c.PprofListen) {
		return fmt.Errorf("server.pprofListen: %q is not a loopback address (127.0.0.0/8, ::1 or localhost with a port): profiles expose the process's memory", c.PprofListen)
	}
	if c.TokenTTL <= 0 {
		return fmt.Errorf("token.ttl: must be positive (a development token would expire as it is printed)")
	}
	// controller-runtime reads a negative grace period as no bound at all.
	if c.ShutdownTimeout < 0 {
		return fmt.Errorf("server.shutdownTimeout: must not be negative")
	}
	if c.UpstreamTimeout <= 0 {
		return fmt.Errorf("upstream.timeout: must be positive")
	}
	if c.ConsoleIdleTimeout <= 0 {
		return fmt.Errorf("console.idleTimeout: must be positive")
	}
	if c.AuditRetention < 0 {
		return fmt.Errorf("audit.retention: must not be negative (0 keeps entries forever)")
	}
	for _, s := range strings.Split(c.StartAfresh, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(AfreshStores, s) {
			return fmt.Errorf("startAfresh: %q is not one of %s", s, strings.Join(AfreshStores, ", "))
		}
	}
	if _, err := c.NodeCapacity(); err != nil {
		return err
	}
	return nil
}

// NodeCapacity is the embedded default's node room (cluster.node.*).
func (c Config) NodeCapacity() (corev1.ResourceList, error) {
	if c.NodePods <= 0 {
		return nil, fmt.Errorf("cluster.node.pods: must be positive")
	}
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(c.NodePods, resource.DecimalSI)}
	for _, q := range []struct {
		key, value string
		name       corev1.ResourceName
	}{{"cluster.node.cpu", c.NodeCPU, corev1.ResourceCPU}, {"cluster.node.memory", c.NodeMemory, corev1.ResourceMemory}} {
		v, err := resource.ParseQuantity(q.value)
		if err != nil || v.Sign() <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive quantity", q.key, q.value)
		}
		out[q.name] = v
	}
	return out, nil
}

// Loopback tells whether a host:port address only listens on the loopback
// interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// DatabaseDriver tells which GORM driver the DSN needs: "postgres" or "sqlite".
func (c Config) DatabaseDriver() string {
	if strings.HasPrefix(c.DatabaseDSN, "postgres://") || strings.HasPrefix(c.DatabaseDSN, "postgresql://") || strings.Contains(c.DatabaseDSN, "host=") {
		return "postgres"
	}
	return "sqlite"
}

// SQLitePath is the SQLite file of the embedded default.
func (c Config) SQLitePath() string {
	if c.DatabaseDSN != "" {
		return c.DatabaseDSN
	}
	return filepath.Join(c.DataDir, "validator-manager.db")
}

// aliases are words people try for a setting under another name.
var aliases = map[string]string{
	"port": "listen", "address": "listen", "addr": "listen", "host": "listen", "bind": "listen",
	"data": "dataDir", "dir": "dataDir", "datadir": "dataDir",
	"kubeconfig": "cluster.kubeconfig", "namespace": "api.namespace", "jwks": "api.auth.jwksUri",
	"loglevel": "log.level", "verbose": "log.level", "debug": "log.level",
	"timeout": "server.requestTimeout", "dsn": "database.dsn", "db": "database.dsn", "database": "database.dsn",
}

// Nearest is the candidate closest to name, "" when none is close: a known
// alias, the candidate whose last segment is name, or the one within a few
// edits of it, ignoring case and '-' (keys and flags spell words differently).
func Nearest(name string, candidates []string) string {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s)) }
	n := norm(name)
	has := func(c string) bool { return slices.Contains(candidates, c) }
	if a, ok := aliases[n]; ok {
		for _, c := range candidates {
			if norm(c) == norm(a) || norm(c) == norm(FlagName(a)) {
				return c
			}
		}
	}
	best, bestDist := "", 0
	for _, c := range candidates {
		cn := norm(c)
		last := cn[strings.LastIndex(cn, ".")+1:]
		if last == n && !has(name) {
			return c
		}
		d := min(editDistance(n, cn), editDistance(n, last))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || bestDist > max(2, len(n)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
