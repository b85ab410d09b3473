package telemetry

import "github.com/prometheus/client_golang/prometheus"

// Registry is where the metrics live (the tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }
