package app

import (
	"path/filepath"

	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// openWorkload sets the workload controller's options: in chart mode
// (splice.charts) the chart renderer lays out the validators, in a
// namespace of each one's own; else the built-in layout (nil Renderer).
func (a *App) openWorkload() error {
	a.workload = workload.Options{MaxConcurrentReconciles: workloadWorkers}
	if a.Config.ChartMode() {
		r, err := a.chartRenderer()
		if err != nil {
			return err
		}
		a.charts, a.workload.Renderer = r, r
	}
	for _, opt := range a.opts {
		opt(Wiring{Workload: &a.workload})
	}
	return nil
}

// chartRenderer is the chart renderer of splice.charts, with
// splice.chartValues, its charts cached on disk in dataDir/charts.
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
		Repository: a.Config.SpliceCharts, Source: src, Namespace: workload.ReleaseNamespace, Values: values,
	}), nil
}
