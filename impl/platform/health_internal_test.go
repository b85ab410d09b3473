package platform

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// countingPinger fails while failing is set, counts its calls, and can be
// held (a slow write).
type countingPinger struct {
	calls   atomic.Int32
	failing atomic.Bool
	hold    chan struct{} // when not nil, each ping waits for it
}

func (p *countingPinger) Ping(ctx context.Context) error {
	p.calls.Add(1)
	if p.hold != nil {
		select {
		case <-p.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if p.failing.Load() {
		return errors.New("cannot be written")
	}
	return nil
}

// TestHealthChecks: a probe answers the last check's report while it is UP
// and younger than healthMaxAge, and starts the next check once it is
// older than healthRefresh; a probe without such a report (none, too old,
// DOWN) waits for a check; probes at once share one check.
func TestHealthChecks(t *testing.T) {
	db := &countingPinger{}
	s := New(Options{Health: map[string]Pinger{"db": db, "cluster": &countingPinger{}}})
	var clock atomic.Int64
	start := time.Now()
	s.now = func() time.Time { return start.Add(time.Duration(clock.Load())) }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	ctx := context.Background()
	probe := func() int {
		t.Helper()
		r, err := s.GetHealth(ctx, platformapi.GetHealthRequestObject{})
		if err != nil {
			t.Fatal(err)
		}
		switch r.(type) {
		case platformapi.GetHealth200JSONResponse:
			return http.StatusOK
		case platformapi.GetHealth503JSONResponse:
			return http.StatusServiceUnavailable
		}
		t.Fatalf("got %T", r)
		return 0
	}
	// settled waits for the check a probe started in the background: a
	// call of the same key joins it (and does nothing when none runs).
	settled := func() {
		t.Helper()
		s.healthFlight.Do("", func() (any, error) { return nil, nil })
	}
	expect := func(what string, status int, calls int32) {
		t.Helper()
		if got := probe(); got != status {
			t.Fatalf("%s: got %d, want %d", what, got, status)
		}
		settled()
		if got := db.calls.Load(); got != calls {
			t.Fatalf("%s: %d checks of db so far, want %d", what, got, calls)
		}
	}

	expect("the first probe checks", http.StatusOK, 1)
	expect("a fresh report is answered", http.StatusOK, 1)
	db.failing.Store(true)
	expect("a report within healthRefresh is answered as it is", http.StatusOK, 1)
	advance(healthRefresh)
	expect("a report older than healthRefresh is answered, and checked again behind it", http.StatusOK, 2)
	expect("the check behind it found db DOWN", http.StatusServiceUnavailable, 2+1)
	expect("a DOWN report is checked again by every probe", http.StatusServiceUnavailable, 4)
	db.failing.Store(false)
	expect("UP again at the next probe", http.StatusOK, 5)
	advance(healthMaxAge)
	db.failing.Store(true)
	expect("a report older than healthMaxAge is not answered: the probe waits for a check", http.StatusServiceUnavailable, 6)

	// Probes at once wait for one check, and all answer its report.
	db.failing.Store(false)
	db.hold = make(chan struct{})
	before := db.calls.Load()
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Go(func() { codes[i] = probe() })
	}
	for db.calls.Load() == before {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the other probes arrive while it runs
	close(db.hold)
	wg.Wait()
	if got := db.calls.Load() - before; got != 1 {
		t.Errorf("8 probes at once: %d checks, want 1", got)
	}
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("probe %d: got %d, want 200", i, c)
		}
	}
}

type pingerFunc func(context.Context) error

func (f pingerFunc) Ping(ctx context.Context) error { return f(ctx) }

// TestStartingIsNoWarning: a component DOWN because the process is still
// starting (domain.ErrStarting: a first sync that has not had its chance)
// is logged at INFO; any other DOWN at WARN.
func TestStartingIsNoWarning(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"starting", domain.Starting("cluster: the gateway's caches have not synced yet"), "level=INFO"},
		{"unavailable", domain.Unavailable("cluster: the gateway's caches have not synced yet (for 2m0s since the start)"), "level=WARN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			s := New(Options{Health: map[string]Pinger{"cluster": pingerFunc(func(context.Context) error { return tt.err })},
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			r, err := s.GetHealth(context.Background(), platformapi.GetHealthRequestObject{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := r.(platformapi.GetHealth503JSONResponse); !ok {
				t.Fatalf("got %T, want 503", r)
			}
			line := logs.String()
			if !strings.Contains(line, `msg="health: component is DOWN"`) || !strings.Contains(line, tt.want) {
				t.Errorf("logged %q, want the DOWN line at %s", line, tt.want)
			}
		})
	}
}
