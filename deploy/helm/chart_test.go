// Package helm_test renders and lints the server's Helm chart with the Helm
// SDK (no helm binary), and checks that its values schema refuses bad values.
package helm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/validator-manager/validator-manager/impl/config"
)

var chartDir = filepath.Join("validator-manager")

func render(t *testing.T, values map[string]any) (map[string]string, error) {
	t.Helper()
	return renderIn(t, "validators", values)
}

// renderIn renders the chart as release "vm" installed in namespace.
func renderIn(t *testing.T, namespace string, values map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: "vm", Namespace: namespace, IsInstall: true}, common.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}

func TestChartLints(t *testing.T) {
	res := lint.RunAll(chartDir, nil, "validators")
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("lint: %s", m)
		}
	}
}

func TestChartRenders(t *testing.T) {
	// Several replicas, which need Keycloak; the PodDisruptionBudget comes with them.
	out, err := render(t, map[string]any{
		"replicaCount": 2,
		"ingress":      map[string]any{"enabled": true},
		"config": map[string]any{
			"idp":      map[string]any{"mode": "keycloak", "keycloak": map[string]any{"url": "https://keycloak.example.test", "clientId": "vm"}},
			"api":      map[string]any{"ingress": map[string]any{"middlewares": "auth-docs@kubernetescrd"}},
			"console":  map[string]any{"idleTimeout": "5m"},
			"outbound": map[string]any{"allowedHosts": "*.scan.test,10.0.0.0/8"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for name, text := range out {
		if strings.TrimSpace(text) == "" || strings.HasSuffix(name, ".tpl") {
			continue
		}
		for _, doc := range strings.Split(text, "\n---") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			if obj != nil {
				docs = append(docs, obj["kind"].(string))
			}
		}
	}
	joined := strings.Join(docs, ",")
	for _, kind := range []string{"Deployment", "Service", "ServiceAccount", "Role", "RoleBinding", "ConfigMap", "PodDisruptionBudget", "Ingress"} {
		if !strings.Contains(joined, kind) {
			t.Errorf("no %s among %s", kind, joined)
		}
	}
	// The runtime's soft limit follows the container's.
	if d := out["validator-manager/templates/deployment.yaml"]; !strings.Contains(d, "name: GOMEMLIMIT") || !strings.Contains(d, "resource: limits.memory") {
		t.Errorf("the Deployment does not set GOMEMLIMIT from its memory limit:\n%s", d)
	}
	cm := out["validator-manager/templates/configmap.yaml"]
	for _, want := range []string{"namespace: validators", "mode: in-cluster", "leaderElection:"} {
		if !strings.Contains(cm, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cm)
		}
	}
	// The server accepts the file (it refuses unknown keys).
	var cmObj struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(cm), &cmObj); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(cmObj.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(nil, func(k string) string {
		if k == "VM_CONFIG" {
			return file
		}
		return ""
	})
	if err != nil {
		t.Fatalf("the server refuses the chart's config.yaml: %v", err)
	}
	if cfg.Namespace != "validators" || !cfg.LeaderElectionEnabled() {
		t.Errorf("config: namespace %q, leader election %v", cfg.Namespace, cfg.LeaderElectionEnabled())
	}
	if cfg.ConsoleIdleTimeout != 5*time.Minute || cfg.OutboundAllowedHosts != "*.scan.test,10.0.0.0/8" {
		t.Errorf("config: console.idleTimeout %s, outbound.allowedHosts %q; want 5m0s, %q", cfg.ConsoleIdleTimeout, cfg.OutboundAllowedHosts, "*.scan.test,10.0.0.0/8")
	}
	ing := out["validator-manager/templates/ingress.yaml"]
	if !strings.Contains(ing, "auth-docs@kubernetescrd") {
		t.Error("docs Ingress lacks the middlewares")
	}
	// The docs page, its console page and assets, and the document.
	for _, path := range []string{"path: /v3/api-docs", "path: /docs-ui.html", "path: /docs-ui/"} {
		if !strings.Contains(ing, path) {
			t.Errorf("docs Ingress lacks %s", path)
		}
	}
}

// TestDeploymentFollowsConfig: the container's port (which the Service and
// the probes name) is the one config.listen makes the server listen on, and
// the writable data volume is mounted where config.dataDir points (the root
// file system is read-only).
func TestDeploymentFollowsConfig(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]any
		port   int
		data   string
	}{
		{"defaults", nil, 8080, "/data"},
		{"another port", map[string]any{"listen": "0.0.0.0:9090"}, 9090, "/data"},
		{"another data directory", map[string]any{"dataDir": "/var/lib/validator-manager"}, 8080, "/var/lib/validator-manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var values map[string]any
			if tt.config != nil {
				values = map[string]any{"config": tt.config}
			}
			out, err := render(t, values)
			if err != nil {
				t.Fatal(err)
			}
			var d struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Ports []struct {
									Name          string `json:"name"`
									ContainerPort int    `json:"containerPort"`
								} `json:"ports"`
								VolumeMounts []struct {
									Name      string `json:"name"`
									MountPath string `json:"mountPath"`
								} `json:"volumeMounts"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal([]byte(out["validator-manager/templates/deployment.yaml"]), &d); err != nil {
				t.Fatal(err)
			}
			c := d.Spec.Template.Spec.Containers[0]
			if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != tt.port {
				t.Errorf("container ports %+v, want http at %d (config.listen)", c.Ports, tt.port)
			}
			var data []string
			for _, m := range c.VolumeMounts {
				if m.Name == "data" {
					data = append(data, m.MountPath)
				}
			}
			if len(data) != 1 || data[0] != tt.data {
				t.Errorf("the data volume is mounted at %v, want %s (config.dataDir)", data, tt.data)
			}
		})
	}
}

// Every key of the server's configuration has a value in values.yaml, so
// an operator finds each one there (and the schema can check it).
func TestValuesCarryEveryConfigKey(t *testing.T) {
	out, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(out["validator-manager/templates/configmap.yaml"]), &cm); err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &file); err != nil {
		t.Fatal(err)
	}
	// Secrets come from Secrets through the environment, never the file.
	secret := map[string]bool{"database.dsn": true, "idp.keycloak.clientSecret": true}
	for _, key := range config.Keys() {
		if secret[key] {
			continue
		}
		var v any = file
		for _, part := range strings.Split(key, ".") {
			m, _ := v.(map[string]any)
			v = m[part]
		}
		if v == nil {
			t.Errorf("values.yaml has no config.%s", key)
		}
	}
}

func TestValuesSchemaRefusesBadValues(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no replicas", map[string]any{"replicaCount": 0}, "replicaCount"},
		{"replicas with the local identity provider", map[string]any{"replicaCount": 2}, "replicaCount 2 with config.idp.mode local: the local identity provider keeps its users in one pod's data directory"},
		{"embedded cluster", map[string]any{"config": map[string]any{"cluster": map[string]any{"mode": "embedded"}}}, "mode"},
		{"log level", map[string]any{"config": map[string]any{"log": map[string]any{"level": "loud"}}}, "level"},
		{"console idle timeout", map[string]any{"config": map[string]any{"console": map[string]any{"idleTimeout": "fifteen minutes"}}}, "idleTimeout"},
		{"pprof on every interface", map[string]any{"config": map[string]any{"server": map[string]any{"pprofListen": "0.0.0.0:6060"}}}, "pprofListen"},
		{"allowHttp as text", map[string]any{"config": map[string]any{"outbound": map[string]any{"allowHttp": "yes"}}}, "allowHttp"},
		{"relative data directory", map[string]any{"config": map[string]any{"dataDir": "data"}}, "dataDir"},
		{"listen without a port", map[string]any{"config": map[string]any{"listen": "0.0.0.0"}}, "listen"},
		// The ServiceMonitor carries no token: without public metrics every
		// scrape of /actuator/prometheus would be answered 401.
		{"service monitor without public metrics", map[string]any{"serviceMonitor": map[string]any{"enabled": true}}, "serviceMonitor.enabled without config.api.metrics.public"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}
