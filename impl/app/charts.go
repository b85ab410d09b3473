package app

import (
	"errors"

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
		a.workload.Renderer = r
	}
	for _, opt := range a.opts {
		opt(Wiring{Workload: &a.workload})
	}
	return nil
}

// chartRenderer is the chart renderer of splice.charts (with
// splice.chartValues and a chart cache in dataDir): the one line to change
// once impl/charts is in.
func (a *App) chartRenderer() (workload.Renderer, error) {
	return nil, errors.New("splice.charts is set, but this build has no chart renderer (impl/charts): unset VM_SPLICE_CHARTS to use the built-in layout")
}
