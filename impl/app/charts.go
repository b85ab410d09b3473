package app

import (
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// openWorkload sets the workload controller's options: chart mode's renderer, or nil.
func (a *App) openWorkload() error {
	a.workload = workload.Options{MaxConcurrentReconciles: workloadWorkers}
	if a.Config.ChartMode() {
		r, err := a.chartRenderer()
		if err != nil {
			return err
		}
		a.charts, a.workload.Renderer = r, r
	}
	apply(a, &a.workload)
	return nil
}

// chartRenderer is splice.charts's renderer, caching in dataDir/charts.
func (a *App) chartRenderer() (*charts.Renderer, error) {
	src, err := charts.NewSource(filepath.Join(a.Config.DataDir, "charts"))
	if err != nil {
		return nil, err
	}
	values, err := charts.LoadValues(a.Config.SpliceChartValues)
	if err != nil {
		return nil, err
	}
	return charts.NewRenderer(charts.Options{
		Repository: a.Config.SpliceCharts, Source: src, Values: values,
	}), nil
}

// releaseNamespace names a validator's release namespace in chart mode; nil otherwise.
func (a *App) releaseNamespace() func(validator string) string {
	if a.charts == nil {
		return nil
	}
	return func(name string) string {
		return workload.ReleaseNamespace(&v1alpha1.Validator{ObjectMeta: metav1.ObjectMeta{Namespace: a.Config.Namespace, Name: name}})
	}
}
