package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/telemetry"
)

func TestTransportOutcomes(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			time.Sleep(200 * time.Millisecond)
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
		case "/broken":
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer upstream.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more

	m := telemetry.New()
	client := &http.Client{Transport: m.Transport("ledger", nil)}
	for _, tc := range []struct {
		url     string
		timeout time.Duration
	}{
		{upstream.URL + "/ok", time.Second},
		{upstream.URL + "/missing", time.Second},
		{upstream.URL + "/broken", time.Second},
		{upstream.URL + "/slow", 20 * time.Millisecond},
		{closed, time.Second},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tc.url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
		cancel()
	}
	for _, outcome := range []string{"ok", "rejected", "failed", "timeout", "error"} {
		n := testutil.CollectAndCount(m.Registry(), "validator_manager_upstream_request_duration_seconds")
		if n != 5 {
			t.Fatalf("series: got %d, want 5 (one per outcome)", n)
		}
		body := scrape(t, m)
		line := fmt.Sprintf(`validator_manager_upstream_request_duration_seconds_count{outcome=%q,upstream="ledger"} 1`, outcome)
		if !strings.Contains(body, line) {
			t.Errorf("missing %s in\n%s", line, body)
		}
	}
}

func scrape(t *testing.T, m *telemetry.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Body.String()
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, telemetry.OutcomeOK},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), telemetry.OutcomeTimeout},
		{&domain.UpstreamError{Endpoint: "ledger", Status: 400, Rejected: true}, telemetry.OutcomeRejected},
		{&domain.UpstreamError{Endpoint: "ledger", Status: 503}, telemetry.OutcomeFailed},
		{&domain.UpstreamError{Endpoint: "ledger", Cause: context.DeadlineExceeded}, telemetry.OutcomeTimeout},
		{errors.New("connection refused"), telemetry.OutcomeError},
	} {
		if got := telemetry.Outcome(tc.err); got != tc.want {
			t.Errorf("Outcome(%v): got %s, want %s", tc.err, got, tc.want)
		}
	}
	var nilMetrics *telemetry.Metrics
	nilMetrics.ObserveUpstream("ledger", telemetry.OutcomeOK, time.Second) // records nothing, does not panic
}

// TestAlsoServesAnotherRegistry: a registry added with Also is served
// beside the process's own, without its Go runtime and process families
// (which both have: served twice, they would fail the whole answer).
func TestAlsoServesAnotherRegistry(t *testing.T) {
	m := telemetry.New()
	other := prometheus.NewRegistry()
	queued := prometheus.NewCounter(prometheus.CounterOpts{Name: "workqueue_adds_total", Help: "adds"})
	other.MustRegister(queued, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	queued.Add(3)
	m.Also(other)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("got %d %s, want 200", rec.Code, rec.Body)
	}
	for _, want := range []string{"workqueue_adds_total 3", "go_goroutines ", "\ngo_gc_heap_live_bytes "} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the answer has no %q", want)
		}
	}
}

// TestOperationCounts: an operation's requests from many goroutines are
// counted under its name and each status, as ObserveRequest counts them.
func TestOperationCounts(t *testing.T) {
	m := telemetry.New()
	op := m.Operation("getValidator")
	statuses := []int{200, 404, 200, 503, 404, 200}
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for _, st := range statuses {
				op.Observe(st, time.Millisecond)
			}
		}()
	}
	for range 8 {
		<-done
	}
	m.ObserveRequest("getValidator", 200, time.Millisecond)
	want := `
# HELP validator_manager_http_requests_total API requests answered, by operationId and HTTP status.
# TYPE validator_manager_http_requests_total counter
validator_manager_http_requests_total{operation="getValidator",status="200"} 25
validator_manager_http_requests_total{operation="getValidator",status="404"} 16
validator_manager_http_requests_total{operation="getValidator",status="503"} 8
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "validator_manager_http_requests_total"); err != nil {
		t.Error(err)
	}
	var none *telemetry.Metrics
	none.Operation("x").Observe(200, time.Millisecond) // records nothing, and does not panic
}
