package platform

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

// healthTimeout bounds one health probe, so that a hung dependency reports
// DOWN instead of hanging the probe that Kubernetes sends.
const healthTimeout = 2 * time.Second

// GetHealth reports UP (200) when every dependency answers, else DOWN (503).
func (s *Server) GetHealth(ctx context.Context, _ platformapi.GetHealthRequestObject) (platformapi.GetHealthResponseObject, error) {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		results = map[string]platformapi.HealthStatus{}
	)
	for name, p := range s.health {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := platformapi.HealthUp
			if p == nil {
				st = platformapi.HealthDown
			} else if err := p.Ping(ctx); err != nil {
				// The body says only DOWN; the log says why (a file that
				// cannot be written, an unreachable server).
				st = platformapi.HealthDown
				s.log.WarnContext(ctx, "health: component is DOWN", "component", name, "error", err)
			}
			mu.Lock()
			results[name] = st
			mu.Unlock()
		}()
	}
	wg.Wait()
	status := func(name string) platformapi.ComponentHealth {
		st, ok := results[name]
		if !ok {
			st = platformapi.HealthDown
		}
		return platformapi.ComponentHealth{Status: st}
	}
	h := platformapi.Health{
		Status:     platformapi.HealthUp,
		Components: platformapi.HealthComponents{Db: status("db"), Cluster: status("cluster")},
	}
	code := http.StatusOK
	// The embedded default's file stores, when it has them.
	optional := func(name string) *platformapi.ComponentHealth {
		if _, ok := s.health[name]; !ok {
			return nil
		}
		c := status(name)
		return &c
	}
	h.Components.Sandbox, h.Components.IdentityProvider = optional("sandbox"), optional("identityProvider")
	down := func(c *platformapi.ComponentHealth) bool { return c != nil && c.Status != platformapi.HealthUp }
	if h.Components.Db.Status != platformapi.HealthUp || h.Components.Cluster.Status != platformapi.HealthUp ||
		down(h.Components.Sandbox) || down(h.Components.IdentityProvider) {
		h.Status = platformapi.HealthDown
		code = http.StatusServiceUnavailable
	}
	if s.leader != nil {
		return withLeaderElection{code: code, health: h, leader: s.leader()}, nil
	}
	if code != http.StatusOK {
		return platformapi.GetHealth503JSONResponse(h), nil
	}
	return platformapi.GetHealth200JSONResponse(h), nil
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
// with the role in its details. The contract's HealthComponents and
// ComponentHealth admit further properties, as Spring Boot's do.
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
			Db             platformapi.ComponentHealth `json:"db"`
			Cluster        platformapi.ComponentHealth `json:"cluster"`
			LeaderElection component                   `json:"leaderElection"`
		} `json:"components"`
	}{Status: r.health.Status}
	body.Components.Db = r.health.Components.Db
	body.Components.Cluster = r.health.Components.Cluster
	body.Components.LeaderElection = component{Status: platformapi.HealthUp, Details: r.leader}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.code)
	return json.NewEncoder(w).Encode(body)
}

// GetInfo reports the build.
func (s *Server) GetInfo(context.Context, platformapi.GetInfoRequestObject) (platformapi.GetInfoResponseObject, error) {
	b := platformapi.BuildInfo{Version: s.version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev := kv.Value
				b.Commit = &rev
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, kv.Value); err == nil {
					b.Time = &t
				}
			}
		}
	}
	return platformapi.GetInfo200JSONResponse{Build: b}, nil
}

// GetPrometheus is never routed: the metrics are served by the Prometheus
// client's own handler (telemetry.Metrics.Handler), a plain handler that
// negotiates the exposition format.
func (s *Server) GetPrometheus(context.Context, platformapi.GetPrometheusRequestObject) (platformapi.GetPrometheusResponseObject, error) {
	return nil, notWired("getPrometheus", "the telemetry handler that serves the metrics")
}
