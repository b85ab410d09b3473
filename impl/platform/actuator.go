package platform

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// healthTimeout bounds one health check, so that a hung dependency reports
// DOWN instead of hanging the probe that Kubernetes sends.
const healthTimeout = 2 * time.Second

// A health check writes (the database's health row, the embedded default's
// file stores) and asks the API server twice, too much for every probe: a
// probe answers the last report while it is UP and younger than
// healthMaxAge, starting the next check in the background once it is older
// than healthRefresh. Without such a report (none, too old, or DOWN) it
// waits for a check, so a server turns UP as soon as it is.
const (
	healthRefresh = 1 * time.Second
	healthMaxAge  = 10 * time.Second
)

// healthReport is one check's result: each component's status, when the
// check started.
type healthReport struct {
	at     time.Time
	status map[string]platformapi.HealthStatus
}

func (r *healthReport) up() bool {
	for _, st := range r.status {
		if st != platformapi.HealthUp {
			return false
		}
	}
	return true
}

// GetHealth reports UP (200) when every dependency answers, else DOWN (503).
func (s *Server) GetHealth(ctx context.Context, _ platformapi.GetHealthRequestObject) (platformapi.GetHealthResponseObject, error) {
	results := s.healthReport(ctx).status
	component := func(name string) *platformapi.ComponentHealth {
		return &platformapi.ComponentHealth{Status: cmp.Or(results[name], platformapi.HealthDown)}
	}
	// The embedded default's file stores, when it has them.
	optional := func(name string) *platformapi.ComponentHealth {
		if _, ok := s.Health[name]; !ok {
			return nil
		}
		return component(name)
	}
	h := platformapi.Health{Status: platformapi.HealthUp, Components: platformapi.HealthComponents{
		Db: *component("db"), Cluster: *component("cluster"), Sandbox: optional("sandbox"), IdentityProvider: optional("identityProvider"),
	}}
	code := http.StatusOK
	for _, c := range []*platformapi.ComponentHealth{&h.Components.Db, &h.Components.Cluster, h.Components.Sandbox, h.Components.IdentityProvider} {
		if c != nil && c.Status != platformapi.HealthUp {
			h.Status, code = platformapi.HealthDown, http.StatusServiceUnavailable
		}
	}
	if s.Leader != nil {
		return withLeaderElection{code: code, health: h, leader: s.Leader()}, nil
	}
	if code != http.StatusOK {
		return platformapi.GetHealth503JSONResponse(h), nil
	}
	return platformapi.GetHealth200JSONResponse(h), nil
}

// healthReport is the report a probe answers (healthRefresh says which).
func (s *Server) healthReport(ctx context.Context) *healthReport {
	if r := s.lastHealth.Load(); r != nil && r.up() {
		if age := s.now().Sub(r.at); age < healthMaxAge {
			if age >= healthRefresh {
				s.startCheck(ctx)
			}
			return r
		}
	}
	return (<-s.startCheck(ctx)).Val.(*healthReport) // bounded by healthTimeout
}

// startCheck starts a check unless one runs. The check is not the
// request's: it outlives a probe that went away, within healthTimeout.
func (s *Server) startCheck(ctx context.Context) <-chan singleflight.Result {
	return s.healthFlight.DoChan("", func() (any, error) {
		r := s.check(context.WithoutCancel(ctx))
		s.lastHealth.Store(r)
		return r, nil
	})
}

// check asks every dependency at once.
func (s *Server) check(ctx context.Context) *healthReport {
	r := &healthReport{at: s.now(), status: make(map[string]platformapi.HealthStatus, len(s.Health))}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for name, p := range s.Health {
		wg.Go(func() {
			st := platformapi.HealthUp
			if err := p.Ping(ctx); err != nil {
				// The body says only DOWN; the log says why, at INFO for a
				// start in progress, which is expected.
				st = platformapi.HealthDown
				level := slog.LevelWarn
				if errors.Is(err, domain.ErrStarting) {
					level = slog.LevelInfo
				}
				s.Logger.Log(ctx, level, "health: component is DOWN", "component", name, "error", err)
			}
			mu.Lock()
			r.status[name] = st
			mu.Unlock()
		})
	}
	wg.Wait()
	return r
}

// LeaderElection is this replica's part in the election among replicas:
// Role is leader, follower or single (no election: one process does
// everything); Identity its name in the Lease.
type LeaderElection struct {
	Role     string `json:"role"`
	Identity string `json:"identity,omitempty"`
}

// withLeaderElection is the health body with one more component,
// leaderElection, always UP (a follower is as ready to serve as the leader)
// with the role in its details; the contract admits further components.
type withLeaderElection struct {
	code   int
	health platformapi.Health
	leader LeaderElection
}

func (r withLeaderElection) VisitGetHealthResponse(w http.ResponseWriter) error {
	type component struct {
		Status  platformapi.HealthStatus `json:"status"`
		Details LeaderElection           `json:"details"`
	}
	body := struct {
		Status     platformapi.HealthStatus `json:"status"`
		Components struct {
			platformapi.HealthComponents
			LeaderElection component `json:"leaderElection"`
		} `json:"components"`
	}{Status: r.health.Status}
	body.Components.HealthComponents = r.health.Components
	body.Components.LeaderElection = component{Status: platformapi.HealthUp, Details: r.leader}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.code)
	return json.NewEncoder(w).Encode(body)
}

// GetInfo reports the build.
func (s *Server) GetInfo(context.Context, platformapi.GetInfoRequestObject) (platformapi.GetInfoResponseObject, error) {
	b := platformapi.BuildInfo{Version: s.Version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				b.Commit = ptr.To(kv.Value)
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, kv.Value); err == nil {
					b.Time = &t
				}
			}
		}
	}
	return platformapi.GetInfo200JSONResponse{Build: b}, nil
}

// GetPrometheus is never routed: the Prometheus client's own handler
// (telemetry.Metrics.Handler) negotiates the exposition format.
func (s *Server) GetPrometheus(context.Context, platformapi.GetPrometheusRequestObject) (platformapi.GetPrometheusResponseObject, error) {
	return nil, notWired("getPrometheus", "the telemetry handler that serves the metrics")
}
