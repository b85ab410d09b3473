package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/validator-manager/validator-manager/impl/config"
)

func TestNames(t *testing.T) {
	cases := []struct{ key, flag, env string }{
		{"api.auth.jwksUri", "api.auth.jwks-uri", "VM_API_AUTH_JWKS_URI"},
		{"dataDir", "data-dir", "VM_DATA_DIR"},
		{"startAfresh", "start-afresh", "VM_START_AFRESH"},
		{"api.namespace", "api.namespace", "VM_API_NAMESPACE"},
		{"idp.keycloak.clientSecret", "idp.keycloak.client-secret", "VM_IDP_KEYCLOAK_CLIENT_SECRET"},
		{"splice.charts", "splice.charts", "VM_SPLICE_CHARTS"},
		{"splice.chartValues", "splice.chart-values", "VM_SPLICE_CHART_VALUES"},
	}
	for _, tc := range cases {
		if got := config.FlagName(tc.key); got != tc.flag {
			t.Errorf("FlagName(%s): got %s, want %s", tc.key, got, tc.flag)
		}
		if got := config.EnvName(tc.key); got != tc.env {
			t.Errorf("EnvName(%s): got %s, want %s", tc.key, got, tc.env)
		}
	}
}

// TestPrecedence: defaults, then the YAML file, then the environment, then flags.
func TestPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "vm.yaml")
	yaml := "api:\n  namespace: from-file\n  auth:\n    jwksUri: https://file.test/jwks\n    issuer: https://file.test\nserver:\n  requestTimeout: 5s\ncluster:\n  mode: kubeconfig\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	if err := fs.Parse([]string{"--config", file, "--api.auth.jwks-uri", "https://flag.test/jwks"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"VM_API_NAMESPACE": "from-env", "VM_API_AUTH_JWKS_URI": "https://env.test/jwks"}
	cfg, err := config.Load(fs, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"api.namespace (env over file)", cfg.Namespace, "from-env"},
		{"api.auth.jwksUri (flag over env)", cfg.JWKSURI, "https://flag.test/jwks"},
		{"api.auth.issuer (file)", cfg.Issuer, "https://file.test"},
		{"cluster.mode (file)", cfg.ClusterMode, config.ClusterKubeconfig},
		{"server.requestTimeout (file)", cfg.RequestTimeout.String(), (5 * time.Second).String()},
		{"listen (default)", cfg.Listen, "127.0.0.1:8080"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestNullInFile: a key written without a value (null, ~ or nothing) in the
// file is not set there, as YAML means it: the default holds, not the text
// "null" (an issuer no token carries) or an empty data directory.
func TestNullInFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "vm.yaml")
	yaml := "api:\n  namespace: ~\n  auth:\n    issuer: null\ndataDir:\nlisten: 127.0.0.1:9090\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(nil, func(k string) string { return map[string]string{"VM_CONFIG": file}[k] })
	if err != nil {
		t.Fatal(err)
	}
	def := config.Default()
	checks := []struct{ name, got, want string }{
		{"api.namespace (~)", cfg.Namespace, def.Namespace},
		{"api.auth.issuer (null)", cfg.Issuer, def.Issuer},
		{"dataDir (no value)", cfg.DataDir, def.DataDir},
		{"listen (set)", cfg.Listen, "127.0.0.1:9090"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestSecretsHaveNoFlag: a command line shows in ps, so secrets come from the
// environment or the file only.
func TestSecretsHaveNoFlag(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	for _, name := range []string{"database.dsn", "idp.keycloak.client-secret"} {
		if fs.Lookup(name) != nil {
			t.Errorf("--%s exists, want no flag for a secret", name)
		}
	}
	cfg, err := config.Load(fs, func(k string) string {
		return map[string]string{"VM_IDP_KEYCLOAK_CLIENT_SECRET": "s", "VM_DATABASE_DSN": "postgres://u:p@db/vm"}[k]
	})
	if err != nil || cfg.KeycloakClientSecret != "s" || cfg.DatabaseDSN != "postgres://u:p@db/vm" {
		t.Fatalf("from the environment: got %+v %v", cfg, err)
	}
}

func TestRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unknown key in file", map[string]string{"VM_CONFIG": write("a.yaml", "api:\n  namespaces: x\n")}, `unknown keys: line 2: "api.namespaces" (did you mean "api.namespace"?)`},
		{"every unknown key in file", map[string]string{"VM_CONFIG": write("b.yaml", "listn: x\nlog:\n  levl: debug\n")}, `unknown keys: line 1: "listn" (did you mean "listen"?), line 3: "log.levl" (did you mean "log.level"?)`},
		{"port is listen", map[string]string{"VM_CONFIG": write("port.yaml", "port: 8080\n")}, `line 1: "port" (did you mean "listen"?)`},
		// yaml.v3 names the line where the enclosing block starts (1 or 2
		// here); the mistake is on the line named.
		{"mis-indented key", map[string]string{"VM_CONFIG": write("c.yaml", "api:\n  namespace: x\n listen: y\n")}, `line 3: did not find expected key: " listen: y"`},
		{"unclosed flow mapping", map[string]string{"VM_CONFIG": write("d.yaml", "log:\n  level: info\napi:\n  auth: {jwksUri: a\nlisten: b\n")}, `line 4:`},
		{"missing colon", map[string]string{"VM_CONFIG": write("e.yaml", "server:\n  requestTimeout: 60s\n  shutdownTimeout 15s\nlisten: a\n")}, `line 3:`},
		{"bad value in file", map[string]string{"VM_CONFIG": write("f.yaml", "listen: a\n\nserver:\n  shutdownTimeout: soon\n")}, `line 4: server.shutdownTimeout: not a duration: "soon"`},
		{"key given twice", map[string]string{"VM_CONFIG": write("g.yaml", "listen: a\nlog:\n  level: info\nlisten: b\n")}, `line 4: listen: given twice (first on line 1)`},
		{"list for a value", map[string]string{"VM_CONFIG": write("h.yaml", "api:\n  namespace:\n    - a\n")}, `line 3: api.namespace: want a single value`},
		{"bad log level", map[string]string{"VM_LOG_LEVEL": "verbose"}, `log.level: "verbose" is not one of`},
		{"unknown cluster mode", map[string]string{"VM_CLUSTER_MODE": "docker"}, "cluster.mode"},
		{"unknown identity provider", map[string]string{"VM_IDP_MODE": "ldap"}, "idp.mode"},
		{"bad duration", map[string]string{"VM_SERVER_REQUEST_TIMEOUT": "soon"}, "VM_SERVER_REQUEST_TIMEOUT"},
		{"missing file", map[string]string{"VM_CONFIG": filepath.Join(dir, "absent.yaml")}, "config file"},
		{"unknown store to start afresh", map[string]string{"VM_START_AFRESH": "idp,database"}, `startAfresh: "database" is not one of idp, sandbox, cluster`},
		{"node cpu not a quantity", map[string]string{"VM_CLUSTER_NODE_CPU": "many"}, `cluster.node.cpu: "many" is not a positive quantity`},
		{"node memory zero", map[string]string{"VM_CLUSTER_NODE_MEMORY": "0"}, `cluster.node.memory: "0" is not a positive quantity`},
		{"node pods zero", map[string]string{"VM_CLUSTER_NODE_PODS": "0"}, `cluster.node.pods: must be positive`},
		{"charts not oci", map[string]string{"VM_SPLICE_CHARTS": "https://ghcr.io/helm"}, `splice.charts: "https://ghcr.io/helm" is not an OCI repository prefix`},
		{"charts without host", map[string]string{"VM_SPLICE_CHARTS": "oci:///helm"}, `splice.charts: "oci:///helm" is not an OCI repository prefix`},
		// A token that expires as it is printed, and a shutdown that
		// controller-runtime would wait for without end.
		{"token ttl zero", map[string]string{"VM_TOKEN_TTL": "0"}, `token.ttl: must be positive`},
		{"token ttl negative", map[string]string{"VM_TOKEN_TTL": "-12h"}, `token.ttl: must be positive`},
		{"shutdown timeout negative", map[string]string{"VM_SERVER_SHUTDOWN_TIMEOUT": "-1s"}, `server.shutdownTimeout: must not be negative`},
		// The console would take 0 for its own default of 15 minutes.
		{"console idle timeout zero", map[string]string{"VM_CONSOLE_IDLE_TIMEOUT": "0"}, `console.idleTimeout: must be positive`},
		{"chart values without charts", map[string]string{"VM_SPLICE_CHART_VALUES": "values.yaml"}, `splice.chartValues: set without splice.charts`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(nil, func(k string) string { return tc.env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestChartMode: splice.charts turns chart mode on.
func TestChartMode(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"VM_SPLICE_CHARTS": "oci://127.0.0.1:5000/helm", "VM_SPLICE_CHART_VALUES": "v.yaml"}, true},
	} {
		c, err := config.Load(nil, func(k string) string { return tc.env[k] })
		if err != nil {
			t.Fatal(err)
		}
		if c.ChartMode() != tc.want || c.SpliceCharts != tc.env["VM_SPLICE_CHARTS"] || c.SpliceChartValues != tc.env["VM_SPLICE_CHART_VALUES"] {
			t.Errorf("%v: chart mode %v (%q, %q)", tc.env, c.ChartMode(), c.SpliceCharts, c.SpliceChartValues)
		}
	}
}

// TestAfresh: startAfresh names stores by a comma-separated list.
func TestAfresh(t *testing.T) {
	cfg, err := config.Load(nil, func(k string) string { return map[string]string{"VM_START_AFRESH": "sandbox, cluster"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	for store, want := range map[string]bool{"sandbox": true, "cluster": true, "idp": false} {
		if got := cfg.Afresh(store); got != want {
			t.Errorf("Afresh(%s): got %v, want %v", store, got, want)
		}
	}
	if config.Default().Afresh("idp") {
		t.Error("the default starts a store afresh, want none")
	}
}

// TestNearest: the suggestion for a misspelt or misnamed flag or key.
func TestNearest(t *testing.T) {
	flags := []string{"listen", "data-dir", "api.namespace", "api.auth.jwks-uri", "log.level", "config"}
	cases := map[string]string{
		"port": "listen", "listn": "listen", "address": "listen", "namespace": "api.namespace",
		"jwks-uri": "api.auth.jwks-uri", "datadir": "data-dir", "log.levl": "log.level", "zzzzzz": "",
	}
	for in, want := range cases {
		if got := config.Nearest(in, flags); got != want {
			t.Errorf("Nearest(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestDatabaseDriver(t *testing.T) {
	cases := map[string]string{
		"":                                    "sqlite",
		"/var/lib/vm/vm.db":                   "sqlite",
		"postgres://u@db:5432/vm":             "postgres",
		"host=db user=vm dbname=vm sslmode=x": "postgres",
	}
	for dsn, want := range cases {
		if got := (config.Config{DatabaseDSN: dsn}).DatabaseDriver(); got != want {
			t.Errorf("DatabaseDriver(%q): got %s, want %s", dsn, got, want)
		}
	}
}

func TestUnknownEnv(t *testing.T) {
	got := config.UnknownEnv([]string{"VM_LISTEN=x", "VM_LISTN=x", "VM_DATADIR=y", "VM_TOKEN=t", "VM_CONFIG=c", "PATH=/bin", "VM_API_AUTH_JWKS_URI=u"})
	if want := []string{"VM_DATADIR", "VM_LISTN"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestRegisterSomeFlags(t *testing.T) {
	fs := pflag.NewFlagSet("token", pflag.ContinueOnError)
	config.RegisterFlags(fs, "dataDir", "token.ttl")
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	slices.Sort(names)
	if want := []string{"config", "data-dir", "token.ttl"}; !slices.Equal(names, want) {
		t.Fatalf("got %v, want %v", names, want)
	}
}

// TestPoolAndPprof: the pool settings have sound defaults and can be set;
// the profiling listener is off by default and refused off loopback.
func TestPoolAndPprof(t *testing.T) {
	def := config.Default()
	if def.PprofListen != "" || def.DatabaseMaxOpenConns != 10 || def.DatabaseMaxIdleConns != def.DatabaseMaxOpenConns || def.DatabaseConnMaxLifetime != 30*time.Minute {
		t.Fatalf("got defaults pprof %q, pool %d/%d/%s; want off, 10/10/30m", def.PprofListen, def.DatabaseMaxOpenConns, def.DatabaseMaxIdleConns, def.DatabaseConnMaxLifetime)
	}
	env := map[string]string{"VM_DATABASE_MAX_OPEN_CONNS": "4", "VM_DATABASE_CONN_MAX_IDLE_TIME": "1m", "VM_SERVER_PPROF_LISTEN": "127.0.0.1:6060"}
	cfg, err := config.Load(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseMaxOpenConns != 4 || cfg.DatabaseConnMaxIdleTime != time.Minute || cfg.PprofListen != "127.0.0.1:6060" {
		t.Fatalf("got %d, %s, %q; want 4, 1m, 127.0.0.1:6060", cfg.DatabaseMaxOpenConns, cfg.DatabaseConnMaxIdleTime, cfg.PprofListen)
	}
	for addr, ok := range map[string]bool{
		"127.0.0.1:6060": true, "[::1]:6060": true, "localhost:6060": true, "127.0.0.2:1": true,
		"0.0.0.0:6060": false, ":6060": false, "192.0.2.1:6060": false, "example.com:6060": false, "127.0.0.1": false,
	} {
		_, err := config.Load(nil, func(k string) string {
			if k == "VM_SERVER_PPROF_LISTEN" {
				return addr
			}
			return ""
		})
		if (err == nil) != ok {
			t.Errorf("server.pprofListen=%q: got error %v, want accepted %v", addr, err, ok)
		}
	}
	if _, err := config.Load(nil, func(k string) string {
		if k == "VM_DATABASE_MAX_IDLE_CONNS" {
			return "-1"
		}
		return ""
	}); err == nil {
		t.Error("database.maxIdleConns=-1: got no error")
	}
}
