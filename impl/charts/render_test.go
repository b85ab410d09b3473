package charts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/charts/chartstest"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

func loadChart(t *testing.T, name, version string) *chart.Chart {
	t.Helper()
	ch, err := loader.LoadArchive(bytes.NewReader(chartstest.Package(t, name, version)))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// kindNames is "Kind/name" of each object, in order.
func kindNames(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
	}
	return out
}

func TestRenderVersions(t *testing.T) {
	values := map[string]any{
		"nodeIdentifier": "node-1",
		"migration":      map[string]any{"id": 3, "migrating": true},
		"metrics":        map[string]any{"enable": true},
		// Go types that are not Helm values until they went through JSON.
		"additionalEnvVars": []corev1.EnvVar{{Name: "EXTRA", Value: "1"}},
		"resources":         map[string]any{"limits": map[string]string{"memory": "1Gi"}},
	}
	tests := []struct {
		version string
		want    []string
	}{
		// Helm's install order; the test hook Pod and NOTES.txt left out.
		{chartstest.V1, []string{"PersistentVolumeClaim/migration-dump", "Service/validator-app", "Service/wallet-web-ui",
			"Deployment/validator-app", "ServiceMonitor/validator-app"}},
		{chartstest.V2, []string{"ConfigMap/validator-settings", "PersistentVolumeClaim/migration-dump", "Service/validator-app",
			"Deployment/validator-app", "ServiceMonitor/validator-app"}},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			objs, err := charts.Render(context.Background(), loadChart(t, "splice-validator", tt.version), "validator", "vm-alice", values)
			if err != nil {
				t.Fatal(err)
			}
			if got := kindNames(objs); !slices.Equal(got, tt.want) {
				t.Fatalf("rendered %v, want %v", got, tt.want)
			}
			for _, o := range objs {
				if o.GetNamespace() != "vm-alice" || o.GetLabels()[charts.ChartLabel] != "splice-validator" {
					t.Errorf("%s: namespace %q labels %v", o.GetName(), o.GetNamespace(), o.GetLabels())
				}
				// The controller never prunes what Helm keeps.
				if got, want := o.GetAnnotations()[workload.KeepAnnotation] == "keep", o.GetName() == "migration-dump"; got != want {
					t.Errorf("%s kept: %t, want %t", o.GetName(), got, want)
				}
			}
			d, ok := objs[3].(*appsv1.Deployment)
			if !ok {
				t.Fatalf("Deployment decoded as %T", objs[3])
			}
			c := d.Spec.Template.Spec.Containers[0]
			if c.Image != "registry.test/images/validator-image:"+tt.version {
				t.Errorf("image %s", c.Image)
			}
			env := fmt.Sprint(c.Env)
			for _, want := range []string{"NODE_IDENTIFIER node-1", "MIGRATION_ID 3", "EXTRA 1"} {
				if !strings.Contains(env, "{"+want) {
					t.Errorf("env %s lacks %s", env, want)
				}
			}
			if q := c.Resources.Limits[corev1.ResourceMemory]; q.String() != "1Gi" {
				t.Errorf("memory limit %s", q.String())
			}
			if _, ok := objs[4].(*unstructured.Unstructured); !ok {
				t.Errorf("ServiceMonitor decoded as %T, want unstructured", objs[4])
			}
			if objs[4].GetObjectKind().GroupVersionKind().Group != "monitoring.coreos.com" {
				t.Errorf("ServiceMonitor gvk %v", objs[4].GetObjectKind().GroupVersionKind())
			}
		})
	}
}

// TestRenderCommentsOnly: a template whose condition is false beneath a
// header comment (metrics off; Splice's serviceMonitor.yaml under its
// licence header) renders no object, as with Helm, rather than failing.
func TestRenderCommentsOnly(t *testing.T) {
	objs, err := charts.Render(context.Background(), loadChart(t, "splice-validator", chartstest.V1), "validator", "vm-alice",
		map[string]any{"metrics": map[string]any{"enable": false}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PersistentVolumeClaim/migration-dump", "Service/validator-app", "Service/wallet-web-ui", "Deployment/validator-app"}
	if got := kindNames(objs); !slices.Equal(got, want) {
		t.Fatalf("rendered %v, want %v", got, want)
	}
}

func TestRenderSchemaFailure(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string // in the message: the value's path
		value  string
	}{
		{"wrong type", map[string]any{"nodeIdentifier": 42}, "/nodeIdentifier", "nodeIdentifier"},
		{"pattern", map[string]any{"nodeIdentifier": "Not Valid"}, "/nodeIdentifier", "nodeIdentifier"},
		{"nested minimum", map[string]any{"nodeIdentifier": "n", "migration": map[string]any{"id": -1}}, "/migration/id", "migration.id"},
		{"server value of the wrong type", map[string]any{"nodeIdentifier": "n", "topup": map[string]any{"targetThroughput": "fast"}}, "/topup/targetThroughput", "topup.targetThroughput"},
		{"required value removed", map[string]any{"migration": nil}, "missing property 'migration'", ""},
		{"two values", map[string]any{"nodeIdentifier": 42, "contactPoint": strings.Repeat("x", 40)}, "at '/contactPoint': maxLength: got 40, want 32; at '/nodeIdentifier': got number", "contactPoint"},
		{"secret value not quoted", map[string]any{"nodeIdentifier": "n",
			"auth": map[string]any{"secretOverrides": map[string]any{"clientSecret": "hunter2"}}},
			"at '/auth/secretOverrides/clientSecret': refused (the value is not shown)", "auth.secretOverrides.clientSecret"},
	}
	ch := loadChart(t, "splice-validator", chartstest.V2)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := charts.Render(context.Background(), ch, "validator", "ns", tt.values)
			var se *charts.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want a *SchemaError", err, err)
			}
			if se.Chart != "splice-validator" || se.Version != chartstest.V2 || se.Value != tt.value || !strings.Contains(se.Message, tt.want) {
				t.Fatalf("schema error %+v, want the chart and %s", se, tt.want)
			}
			t.Log(err)
			if strings.Contains(se.Message, "\n") || strings.Contains(se.Message, "hunter2") {
				t.Fatalf("message %q spans lines", se.Message)
			}
		})
	}
}
