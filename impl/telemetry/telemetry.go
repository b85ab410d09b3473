// Package telemetry holds the server's operational metrics, served in the
// Prometheus text format at /actuator/prometheus.
package telemetry

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

const namespace = "validator_manager"

var liveHeap = regexp.MustCompile(`^/gc/heap/live:bytes$`)

// Outcomes of an upstream call (the label outcome of
// validator_manager_upstream_request_duration_seconds).
const (
	OutcomeOK       = "ok"       // a 2xx or 3xx answer
	OutcomeRejected = "rejected" // a 4xx answer: the upstream refused the request
	OutcomeFailed   = "failed"   // a 5xx answer
	OutcomeError    = "error"    // no answer: connection refused, reset, TLS, ...
	OutcomeTimeout  = "timeout"  // no answer within the call's deadline
)

// Metrics is one process's metrics, in a registry of its own (several
// servers in one test binary do not mix their counts). A nil *Metrics
// records nothing, so callers need no check.
type Metrics struct {
	registry *prometheus.Registry
	// also are served beside registry (Also).
	also     prometheus.Gatherers
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	upstream *prometheus.HistogramVec
	probes   *prometheus.CounterVec
}

// New registers the metrics, with Go runtime and process metrics beside them.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "API requests answered, by operationId and HTTP status.",
		}, []string{"operation", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer an API request, by operationId and HTTP status.",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation", "status"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "upstream_request_duration_seconds",
			Help:    "Time of a call to an upstream (ledger, scan, validator app, participant admin), by upstream and outcome (ok, rejected, failed, error, timeout).",
			Buckets: prometheus.DefBuckets,
		}, []string{"upstream", "outcome"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "remote_participant_probes_total",
			Help: "Health probes of remote participants, by outcome: healthy, unhealthy, or not_probed (the outbound address policy refuses the admin address).",
		}, []string{"outcome"}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.upstream, m.probes,
		// go_gc_heap_live_bytes: what memory grows with, where
		// go_memstats_heap_alloc_bytes also counts garbage not yet collected.
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: liveHeap})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Also serves g's metrics (controller-runtime's registry) beside the
// process's own, but for the Go runtime and process families, which the
// process's registry has. Call it before Handler.
func (m *Metrics) Also(g prometheus.Gatherer) {
	m.also = append(m.also, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		fs, err := g.Gather()
		return slices.DeleteFunc(fs, func(f *dto.MetricFamily) bool {
			return strings.HasPrefix(f.GetName(), "go_") || strings.HasPrefix(f.GetName(), "process_")
		}), err
	}))
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(append(prometheus.Gatherers{m.registry}, m.also...), promhttp.HandlerOpts{Registry: m.registry})
}

// Registry is where the metrics live (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Operation is the request metrics of one operation, its name's label
// bound once (the vectors curried) rather than at every request.
func (m *Metrics) Operation(name string) *Operation {
	if m == nil {
		return nil
	}
	op := prometheus.Labels{"operation": name}
	return &Operation{count: m.requests.MustCurryWith(op), latency: m.latency.MustCurryWith(op)}
}

// Operation records the requests of one operationId; a nil *Operation
// records nothing.
type Operation struct {
	count   *prometheus.CounterVec
	latency prometheus.ObserverVec
}

// Observe records one answered request.
func (o *Operation) Observe(status int, d time.Duration) {
	if o == nil {
		return
	}
	label := strconv.Itoa(status)
	o.count.WithLabelValues(label).Inc()
	o.latency.WithLabelValues(label).Observe(d.Seconds())
}

// ObserveUpstream records one call to an upstream. upstream names the API,
// not an address: labels must stay few. outcome is an Outcome constant.
func (m *Metrics) ObserveUpstream(upstream, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.upstream.WithLabelValues(upstream, outcome).Observe(d.Seconds())
}

// Outcomes of a remote participant's health probe.
const (
	ProbeHealthy   = "healthy"
	ProbeUnhealthy = "unhealthy"
	ProbeNotProbed = "not_probed" // the outbound address policy refuses its admin address
)

// ObserveProbe counts one remote participant's probe by its outcome (a
// Probe constant).
func (m *Metrics) ObserveProbe(outcome string) {
	if m == nil {
		return
	}
	m.probes.WithLabelValues(outcome).Inc()
}

// StatusOutcome is the outcome of a call that got an HTTP answer.
func StatusOutcome(status int) string {
	switch {
	case status >= 500:
		return OutcomeFailed
	case status >= 400:
		return OutcomeRejected
	}
	return OutcomeOK
}

// Transport wraps next (nil: http.DefaultTransport) so that every call
// through it is observed under upstream, whatever its outcome.
func (m *Metrics) Transport(upstream string, next http.RoundTripper) http.RoundTripper {
	next = cmp.Or(next, http.DefaultTransport)
	if m == nil {
		return next
	}
	return promhttp.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(r)
		outcome := OutcomeError
		switch {
		case err == nil:
			outcome = StatusOutcome(resp.StatusCode)
		case errors.Is(err, context.DeadlineExceeded) || r.Context().Err() == context.DeadlineExceeded:
			outcome = OutcomeTimeout
		}
		m.ObserveUpstream(upstream, outcome, time.Since(start))
		return resp, err
	})
}

// WatchSync publishes validator_manager_informer_synced{informer}, read
// from state at each scrape.
func (m *Metrics) WatchSync(state func() map[string]bool) {
	if m == nil {
		return
	}
	m.registry.MustRegister(syncCollector{state: state, desc: prometheus.NewDesc(
		prometheus.BuildFQName(namespace, "", "informer_synced"),
		"1 when the cluster gateway's cache of that kind has synced (reads are served from it), else 0.",
		[]string{"informer"}, nil)})
}

type syncCollector struct {
	state func() map[string]bool
	desc  *prometheus.Desc
}

func (c syncCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c syncCollector) Collect(ch chan<- prometheus.Metric) {
	for name, ok := range c.state() {
		v := 0.0
		if ok {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, name)
	}
}
