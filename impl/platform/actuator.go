package platform

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/validator-manager/validator-manager/gen/platform"
)

// healthTimeout bounds one health probe, so that a hung dependency reports
// DOWN instead of hanging the probe that Kubernetes sends.
const healthTimeout = 2 * time.Second

// GetHealth reports UP (200) when every dependency answers, else DOWN (503).
func (s *Server) GetHealth(ctx context.Context, _ platform.GetHealthRequestObject) (platform.GetHealthResponseObject, error) {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		results = map[string]platform.HealthStatus{}
	)
	for name, p := range s.health {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := platform.HealthUp
			if p == nil || p.Ping(ctx) != nil {
				st = platform.HealthDown
			}
			mu.Lock()
			results[name] = st
			mu.Unlock()
		}()
	}
	wg.Wait()
	status := func(name string) platform.ComponentHealth {
		st, ok := results[name]
		if !ok {
			st = platform.HealthDown
		}
		return platform.ComponentHealth{Status: st}
	}
	h := platform.Health{
		Status:     platform.HealthUp,
		Components: platform.HealthComponents{Db: status("db"), Cluster: status("cluster")},
	}
	if h.Components.Db.Status != platform.HealthUp || h.Components.Cluster.Status != platform.HealthUp {
		h.Status = platform.HealthDown
		return platform.GetHealth503JSONResponse(h), nil
	}
	return platform.GetHealth200JSONResponse(h), nil
}

// GetInfo reports the build.
func (s *Server) GetInfo(context.Context, platform.GetInfoRequestObject) (platform.GetInfoResponseObject, error) {
	b := platform.BuildInfo{Version: s.version}
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
	return platform.GetInfo200JSONResponse{Build: b}, nil
}
