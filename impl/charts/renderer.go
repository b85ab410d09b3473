package charts

import (
	"cmp"
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// Reasons of the *workload.RenderError the Renderer returns.
const (
	// ReasonChartUnavailable: a chart could not be pulled.
	ReasonChartUnavailable = "ChartUnavailable"
	// ReasonChartValuesInvalid: a chart refuses the values derived.
	ReasonChartValuesInvalid = "ChartValuesInvalid"
)

// Options of a Renderer.
type Options struct {
	// Repository is the charts' OCI prefix (splice.charts).
	Repository string
	Source     *Source
	// Values are the server's chart values (splice.chartValues).
	Values map[string]any
}

// Renderer lays out a Validator as Splice's charts at its imageTag, in its
// release namespace.
type Renderer struct {
	opts Options
}

var _ workload.Renderer = (*Renderer)(nil)

// NewRenderer is a Renderer with opts.
func NewRenderer(opts Options) *Renderer { return &Renderer{opts: opts} }

// releases are the charts of a validator's layout.
var releases = []struct{ chart, release string }{
	{ParticipantChart, ParticipantRelease},
	{ValidatorChart, ValidatorRelease},
}

// Render pulls both charts and renders them; a *workload.RenderError
// when a chart cannot be pulled or refuses the values.
func (r *Renderer) Render(ctx context.Context, v *v1alpha1.Validator) (*workload.Layout, error) {
	var pulled []*Chart
	for _, rel := range releases {
		c, err := r.opts.Source.Get(Reference(r.opts.Repository, rel.chart), v.Spec.Config.ImageTag)
		var pe *PullError
		if errors.As(err, &pe) {
			return nil, &workload.RenderError{Reason: ReasonChartUnavailable, Message: pe.Error(), Err: err}
		} else if err != nil {
			return nil, err
		}
		pulled = append(pulled, c)
	}
	return r.render(ctx, v, pulled)
}

// Check renders v when both charts are cached and returns the *SchemaError
// of the values; nil otherwise (any other failure is the controller's to show).
func (r *Renderer) Check(ctx context.Context, v *v1alpha1.Validator) error {
	var pulled []*Chart
	for _, rel := range releases {
		c, ok := r.opts.Source.Cached(Reference(r.opts.Repository, rel.chart), v.Spec.Config.ImageTag)
		if !ok {
			return nil
		}
		pulled = append(pulled, c)
	}
	_, err := r.render(ctx, v, pulled)
	var se *SchemaError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

func (r *Renderer) render(ctx context.Context, v *v1alpha1.Validator, pulled []*Chart) (*workload.Layout, error) {
	values, err := Values(v, r.opts.Values)
	if err != nil {
		return nil, &workload.RenderError{Reason: ReasonChartValuesInvalid, Message: err.Error(), Err: err}
	}
	ns := workload.ReleaseNamespace(v)
	// The validator's own database: splice-postgres is deprecated.
	layout := &workload.Layout{Namespace: ns, Objects: workload.ChartPostgres(v)}
	for i, rel := range releases {
		c := pulled[i]
		objs, err := Render(ctx, c.Chart, rel.release, ns, values[rel.chart])
		if err != nil {
			// A template that fails (a required value) fails on the values.
			return nil, &workload.RenderError{Reason: ReasonChartValuesInvalid, Message: err.Error(), Err: err}
		}
		for _, o := range objs {
			if applied(o) {
				labelComponent(o)
				layout.Objects = append(layout.Objects, o)
			}
		}
		layout.Charts = append(layout.Charts, v1alpha1.ChartRef{
			Name: c.Name, Reference: c.Reference, Version: c.Version, Digest: c.Digest,
		})
	}
	return layout, nil
}

// applied tells whether the workload controller applies obj; any other
// kind (a ServiceMonitor, whose CRD a cluster may lack) is left out.
func applied(obj client.Object) bool {
	switch obj.(type) {
	case *appsv1.Deployment, *appsv1.StatefulSet, *corev1.Service, *corev1.PersistentVolumeClaim, *corev1.ConfigMap:
		return true
	}
	return false
}

// labelComponent labels a workload and its pod template with the component
// its status is read as: the charts' label app.
func labelComponent(obj client.Object) {
	tmpl := workload.PodTemplate(obj)
	if tmpl == nil {
		return
	}
	component := cmp.Or(obj.GetLabels()["app"], obj.GetName())
	obj.SetLabels(labels.Merge(obj.GetLabels(), labels.Set{workload.ComponentLabel: component}))
	tmpl.Labels = labels.Merge(tmpl.Labels, labels.Set{workload.ComponentLabel: component})
}
