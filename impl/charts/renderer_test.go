package charts_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/charts/chartstest"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

func newRenderer(t *testing.T, reg *chartstest.Registry) *charts.Renderer {
	t.Helper()
	src, err := charts.NewSource(filepath.Join(t.TempDir(), "charts"))
	if err != nil {
		t.Fatal(err)
	}
	return charts.NewRenderer(charts.Options{Repository: reg.Repository, Source: src})
}

func TestRendererRender(t *testing.T) {
	reg := chartstest.NewRegistry(t)
	reg.Push(t, chartstest.V1, chartstest.V2)
	r := newRenderer(t, reg)
	ctx := context.Background()

	tests := []struct {
		version string
		want    []string
	}{
		// The sample's metrics.enable renders a ServiceMonitor, which the
		// layout leaves out (the controller applies none).
		// First the validator's own database (workload.ChartPostgres).
		{chartstest.V1, []string{"StatefulSet/alice-postgres", "Service/alice-postgres", "Service/participant", "Deployment/participant",
			"PersistentVolumeClaim/migration-dump", "Service/validator-app", "Service/wallet-web-ui", "Deployment/validator-app"}},
		{chartstest.V2, []string{"StatefulSet/alice-postgres", "Service/alice-postgres", "Service/participant", "Deployment/participant",
			"ConfigMap/validator-settings", "PersistentVolumeClaim/migration-dump", "Service/validator-app", "Deployment/validator-app"}},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			v := sample(tt.version)
			layout, err := r.Render(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			ns := workload.ReleaseNamespace(v)
			if layout.Namespace != ns {
				t.Fatalf("namespace %q", layout.Namespace)
			}
			if got := kindNames(layout.Objects); !slices.Equal(got, tt.want) {
				t.Fatalf("rendered %v, want %v", got, tt.want)
			}
			for _, o := range layout.Objects {
				if d, ok := o.(*appsv1.Deployment); ok {
					if c := d.Labels[workload.ComponentLabel]; c != d.Name || d.Spec.Template.Labels[workload.ComponentLabel] != c {
						t.Errorf("Deployment %s: component %q, pods' %q", d.Name, c, d.Spec.Template.Labels[workload.ComponentLabel])
					}
				}
				if o.GetNamespace() != ns {
					t.Errorf("%s in namespace %q", o.GetName(), o.GetNamespace())
				}
				want := charts.ValidatorChart
				switch o.GetName() {
				case "participant":
					want = charts.ParticipantChart
				case "alice-postgres":
					want = "" // ours, not a chart's
				}
				if got := o.GetLabels()[charts.ChartLabel]; got != want {
					t.Errorf("%s labelled chart %q, want %q", o.GetName(), got, want)
				}
			}
			if len(layout.Charts) != 2 {
				t.Fatalf("charts %+v", layout.Charts)
			}
			for i, name := range []string{charts.ParticipantChart, charts.ValidatorChart} {
				c := layout.Charts[i]
				if c.Name != name || c.Reference != reg.Repository+"/"+name || c.Version != tt.version || !strings.HasPrefix(c.Digest, "sha256:") {
					t.Errorf("chart %d: %+v", i, c)
				}
			}
		})
	}

	// The charts are cached: the registry gone, the validator still renders.
	reg.Server.Close()
	if _, err := r.Render(ctx, sample(chartstest.V1)); err != nil {
		t.Fatalf("render from the cache: %v", err)
	}
}

func TestRendererFailures(t *testing.T) {
	tests := []struct {
		name    string
		v       func() *v1alpha1.Validator
		stop    bool
		reason  string
		message []string
	}{
		{
			name:    "unknown version",
			v:       func() *v1alpha1.Validator { return sample("0.0.42") },
			reason:  charts.ReasonChartUnavailable,
			message: []string{"/charts/splice-participant:0.0.42", string(charts.NotFound)},
		},
		{
			name:    "registry gone",
			v:       func() *v1alpha1.Validator { return sample(chartstest.V1) },
			stop:    true,
			reason:  charts.ReasonChartUnavailable,
			message: []string{"/charts/splice-participant:" + chartstest.V1, string(charts.Unreachable)},
		},
		{
			name: "derived value the schema refuses",
			v: func() *v1alpha1.Validator {
				v := sample(chartstest.V1)
				v.Spec.Config.ParticipantNode.NodeIdentifier = ptr.To("Not Valid")
				return v
			},
			reason:  charts.ReasonChartValuesInvalid,
			message: []string{"splice-validator", "/nodeIdentifier", "does not match pattern"},
		},
		{
			name: "per-validator value the schema refuses",
			v: func() *v1alpha1.Validator {
				v := sample(chartstest.V1)
				v.Spec.ChartValues = chartValues(t, map[string]any{"splice-validator": map[string]any{"topup": map[string]any{"targetThroughput": "fast"}}})
				return v
			},
			reason:  charts.ReasonChartValuesInvalid,
			message: []string{"splice-validator", "/topup/targetThroughput"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := chartstest.NewRegistry(t)
			reg.Push(t, chartstest.V1)
			if tt.stop {
				reg.Server.Close()
			}
			layout, err := newRenderer(t, reg).Render(context.Background(), tt.v())
			var re *workload.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("error %v (%T), want a *workload.RenderError", err, err)
			}
			if layout != nil || re.Reason != tt.reason {
				t.Fatalf("layout %v, reason %q; want none and %q", layout, re.Reason, tt.reason)
			}
			for _, want := range tt.message {
				if !strings.Contains(re.Message, want) {
					t.Errorf("message %q lacks %q", re.Message, want)
				}
			}
		})
	}
}

func TestRendererCheck(t *testing.T) {
	reg := chartstest.NewRegistry(t)
	reg.Push(t, chartstest.V1)
	r := newRenderer(t, reg)
	ctx := context.Background()
	invalid := sample(chartstest.V1)
	invalid.Spec.Config.ParticipantNode.NodeIdentifier = ptr.To("Not Valid")

	// Charts not cached yet: nothing to check against, no network.
	if err := r.Check(ctx, invalid); err != nil {
		t.Fatalf("check before the charts are cached: %v", err)
	}
	if _, err := r.Render(ctx, sample(chartstest.V1)); err != nil {
		t.Fatal(err)
	}
	reg.Server.Close()

	if err := r.Check(ctx, sample(chartstest.V1)); err != nil {
		t.Fatalf("check of valid values: %v", err)
	}
	err := r.Check(ctx, invalid)
	var se *charts.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("check: %v (%T), want a *SchemaError", err, err)
	}
	if se.Chart != charts.ValidatorChart || !strings.Contains(se.Message, "/nodeIdentifier") {
		t.Fatalf("schema error %+v", se)
	}
	// Another version, not cached: not checked.
	other := invalid.DeepCopy()
	other.Spec.Config.ImageTag = chartstest.V2
	if err := r.Check(ctx, other); err != nil {
		t.Fatalf("check of an uncached version: %v", err)
	}
}
