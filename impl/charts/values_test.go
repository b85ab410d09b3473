package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// sample is a validator as the API writes one, with a sponsor, an
// onboarding secret, resources and env for its apps, and a top-up.
func sample(imageTag string) *v1alpha1.Validator {
	return &v1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "validators", UID: "uid-1", Generation: 1},
		Spec: v1alpha1.ValidatorSpec{
			Config: v1alpha1.ValidatorConfig{
				Version: v1alpha1.ValidatorConfigVersion, Name: "alice", ImageRepo: "ghcr.io/example/docker", ImageTag: imageTag,
				Auth: &v1alpha1.Auth{Audience: "https://ledger.example.test", LedgerAPIUser: "ledger-user",
					JWKSURL: ptr.To("https://idp.example.test/jwks")},
				Cluster: v1alpha1.Cluster{
					ScanAddress: "http://scan.example.test", SVSponsorAddress: "http://sv.example.test", PartyHint: "acme-validator-1",
					DefaultJVMOptions: "-Xmx2g", ContactPoint: ptr.To("ops@example.test"),
					ValidatorApp: v1alpha1.App{EnvVars: []corev1.EnvVar{{Name: "EXTRA", Value: "1"}}},
					Metrics:      &v1alpha1.Metrics{Enable: ptr.To(true), Interval: ptr.To("1m")},
					TopUp:        &v1alpha1.TopUp{Enable: ptr.To(true), TargetThroughput: ptr.To[int32](20000), MinTopupInterval: ptr.To("1m")},
				},
				// A later variable of a name replaces the earlier; a nameless one is skipped.
				EnvVars: &[]corev1.EnvVar{{Name: "GLOBAL", Value: "g"}, {Name: "EXTRA", Value: "2"}, {Value: "nameless"}},
				Participant: v1alpha1.App{
					EnvVars: []corev1.EnvVar{{Name: "P_VAR", Value: "p"}},
					Workload: v1alpha1.Workload{Resources: &corev1.ResourceRequirements{
						Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
					}},
				},
			},
			StorageClass: "fast",
			Migration:    v1alpha1.MigrationSpec{ID: 3, Migrating: true},
			Secrets: &v1alpha1.ValidatorSecretRefs{
				Onboarding: &v1alpha1.SecretKeyRef{Name: "alice-onboarding", Key: "secret"},
			},
		},
	}
}

// at is the value at a dotted path of values, and whether it is there.
func at(values map[string]any, path string) (any, bool) {
	var cur any = values
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// jsonOf is v as it reads after a JSON round trip.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func chartValues(t *testing.T, v any) *apiextensionsv1.JSON {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: b}
}

func TestValues(t *testing.T) {
	server := map[string]any{
		"splice-validator": map[string]any{
			"spliceInstanceNames": map[string]any{"networkName": "TestNet"},
			"defaultJvmOptions":   "-server-wide",
			"nodeIdentifier":      "from-server",
			"scanClient":          map[string]any{"scanType": "bft", "seedUrls": []string{"https://scan-1.test"}},
		},
		"splice-participant": map[string]any{"enableHealthProbes": false, "extraVolumes": []any{}},
	}
	type want map[string]any // "chart:path" → value after JSON; nil: absent
	tests := []struct {
		name   string
		edit   func(v *v1alpha1.Validator)
		server map[string]any
		want   want
	}{
		{
			name:   "derived from the validator",
			server: server,
			want: want{
				"splice-validator:nodeIdentifier":                                   "alice",
				"splice-validator:validatorPartyHint":                               "acme-validator-1",
				"splice-validator:svSponsorAddress":                                 "http://sv.example.test",
				"splice-validator:scanAddress":                                      "http://scan.example.test",
				"splice-validator:onboardingSecretFrom.secretKeyRef.name":           workload.ChartOnboardingSecret,
				"splice-validator:onboardingSecretFrom.secretKeyRef.key":            "secret",
				"splice-validator:migration.id":                                     3.0,
				"splice-validator:migration.migrating":                              true,
				"splice-validator:participantAddress":                               charts.ParticipantRelease,
				"splice-validator:auth.audience":                                    "https://ledger.example.test",
				"splice-validator:auth.jwksUrl":                                     "https://idp.example.test/jwks",
				"splice-validator:persistence.host":                                 "alice-postgres",
				"splice-validator:persistence.port":                                 5432.0,
				"splice-validator:persistence.user":                                 "cnadmin", // the charts' init steps connect as cnadmin (workload.ChartDatabase)
				"splice-validator:persistence.databaseName":                         "cantonnet_validator",
				"splice-validator:persistence.secretName":                           workload.ChartDatabaseSecret,
				"splice-validator:imageRepo":                                        "ghcr.io/example/docker",
				"splice-validator:defaultJvmOptions":                                "-Xmx2g",
				"splice-validator:contactPoint":                                     "ops@example.test",
				"splice-validator:topup":                                            map[string]any{"enabled": true, "targetThroughput": 20000.0, "minTopupInterval": "1m"},
				"splice-validator:additionalEnvVars":                                []any{map[string]any{"name": "EXTRA", "value": "2"}, map[string]any{"name": "GLOBAL", "value": "g"}},
				"splice-validator:metrics":                                          map[string]any{"enable": true, "interval": "1m"},
				"splice-validator:pvc.volumeStorageClass":                           "fast",
				"splice-validator:enableWallet":                                     true,
				"splice-validator:spliceInstanceNames.networkName":                  "TestNet",
				"splice-validator:scanClient.seedUrls":                              []any{"https://scan-1.test"},
				"splice-participant:persistence.databaseName":                       "participant_3",
				"splice-participant:persistence.schema":                             "participant",
				"splice-participant:auth.targetAudience":                            "https://ledger.example.test",
				"splice-participant:participantAdminUserNameFrom.secretKeyRef.name": workload.ChartLedgerAPIAuthSecret,
				"splice-participant:resources":                                      map[string]any{"limits": map[string]any{"memory": "4Gi"}},
				"splice-participant:additionalEnvVars":                              []any{map[string]any{"name": "P_VAR", "value": "p"}},
				// modelled: the validator's configuration beats the server's
				"splice-participant:enableHealthProbes": true,
				"splice-participant:extraVolumes":       []any{},
			},
		},
		{
			name:   "spec.chartValues override the server and the modelled values, not the pinned ones",
			server: server,
			edit: func(v *v1alpha1.Validator) {
				v.Spec.ChartValues = chartValues(t, map[string]any{
					"splice-validator": map[string]any{
						"defaultJvmOptions":   "-per-validator",
						"nodeIdentifier":      "hijack",
						"persistence":         map[string]any{"host": "elsewhere", "enablePgInitContainer": false},
						"spliceInstanceNames": map[string]any{"amuletName": "Coin"},
						"contactPoint":        nil,
					},
				})
			},
			want: want{
				"splice-validator:defaultJvmOptions":                 "-per-validator",
				"splice-validator:nodeIdentifier":                    "alice",
				"splice-validator:persistence.host":                  "alice-postgres",
				"splice-validator:persistence.enablePgInitContainer": true, // pinned: the manager provisions the database
				"splice-validator:spliceInstanceNames.networkName":   "TestNet",
				"splice-validator:spliceInstanceNames.amuletName":    "Coin",
				"splice-validator:contactPoint":                      nil, // null: removes the chart's default when rendered
			},
		},
		{
			name: "no top-up configured: none, unless a values layer sets one",
			edit: func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.TopUp = nil },
			want: want{"splice-validator:topup": map[string]any{"enabled": false}},
		},
		{
			name:   "the UIs' names: the built-in layout's unless a values layer names them",
			server: server,
			want: want{
				"splice-validator:spliceInstanceNames.networkName":            "TestNet",
				"splice-validator:spliceInstanceNames.amuletName":             "Canton Coin",
				"splice-validator:spliceInstanceNames.nameServiceNameAcronym": "CNS",
			},
		},
		{
			name:   "no top-up configured, the server's",
			edit:   func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.TopUp = nil },
			server: map[string]any{"splice-validator": map[string]any{"topup": map[string]any{"enabled": true, "targetThroughput": 1, "minTopupInterval": "5m"}}},
			want:   want{"splice-validator:topup": map[string]any{"enabled": true, "targetThroughput": 1.0, "minTopupInterval": "5m"}},
		},
		{
			name: "external database, no sponsor, wallet disabled",
			edit: func(v *v1alpha1.Validator) {
				v.Spec.ExternalDatabase = true
				v.Spec.Database = &v1alpha1.DatabaseRef{User: "cnadmin"}
				v.Spec.Config.Database = &v1alpha1.Database{External: ptr.To(true), Hostname: ptr.To("db.example.test"), Port: ptr.To("5433")}
				v.Spec.Config.Cluster.SVSponsorAddress = ""
				v.Spec.Config.Cluster.DisabledWallet = ptr.To(true)
				v.Spec.Config.ParticipantNode.NodeIdentifier = ptr.To("alice-node")
			},
			want: want{
				"splice-validator:persistence.host":       "db.example.test",
				"splice-validator:persistence.port":       5433.0,
				"splice-validator:persistence.user":       "cnadmin",
				"splice-participant:persistence.host":     "db.example.test",
				"splice-validator:nodeIdentifier":         "alice-node",
				"splice-validator:enableWallet":           false,
				"splice-validator:ansWebUi.enabled":       false,
				"splice-validator:validatorWebUi.enabled": false,
				"splice-validator:svSponsorAddress":       nil,
				"splice-validator:onboardingSecretFrom":   nil,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := sample("0.9.1")
			if tt.edit != nil {
				tt.edit(v)
			}
			got, err := charts.Values(v, tt.server)
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range tt.want {
				chart, path, _ := strings.Cut(key, ":")
				val, ok := at(got[chart], path)
				if want == nil {
					if val != nil {
						t.Errorf("%s = %#v, want absent or null", key, val)
					}
					continue
				}
				if !ok || !reflect.DeepEqual(jsonOf(t, val), want) {
					t.Errorf("%s = %#v, want %#v", key, val, want)
				}
			}
		})
	}
}

func TestValuesRefusesMalformedChartValues(t *testing.T) {
	for name, cv := range map[string]any{
		"not an object":         []any{1},
		"a chart's not a table": map[string]any{"splice-validator": "x"},
	} {
		t.Run(name, func(t *testing.T) {
			v := sample("0.9.1")
			v.Spec.ChartValues = chartValues(t, cv)
			if _, err := charts.Values(v, nil); err == nil || !strings.Contains(err.Error(), "spec.chartValues") {
				t.Fatalf("error %v, want one naming spec.chartValues", err)
			}
		})
	}
}

func TestLoadValues(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if vals, err := charts.LoadValues(""); err != nil || vals != nil {
		t.Fatalf("no file: %v %v", vals, err)
	}
	vals, err := charts.LoadValues(write("ok.yaml", "splice-validator:\n  spliceInstanceNames:\n    networkName: TestNet\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := charts.Values(sample("0.9.1"), vals)
	if err != nil {
		t.Fatal(err)
	}
	if name, _ := at(got[charts.ValidatorChart], "spliceInstanceNames.networkName"); name != "TestNet" {
		t.Fatalf("networkName %v", name)
	}
	for name, text := range map[string]string{
		"not-yaml.yaml":  "splice-validator: [",
		"not-table.yaml": "splice-participant: 3\n",
		"missing.yaml":   "",
	} {
		path := filepath.Join(dir, name)
		if text != "" {
			path = write(name, text)
		}
		if _, err := charts.LoadValues(path); err == nil || !strings.Contains(err.Error(), "splice.chartValues") {
			t.Errorf("%s: error %v, want one naming splice.chartValues", name, err)
		}
	}
}
