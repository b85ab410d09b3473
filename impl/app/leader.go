package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/validator-manager/validator-manager/impl/platform"
)

// Roles a replica reports in /actuator/health.
const (
	// RoleLeader runs the controllers, schedules and probes.
	RoleLeader = "leader"
	// RoleFollower serves the API only, recording intent for the leader.
	RoleFollower = "follower"
	// RoleSingle is a process without leader election: it does everything.
	RoleSingle = "single"
)

// leadership is this process's part in the election.
type leadership struct {
	enabled  bool
	identity string
	leading  atomic.Bool
}

// Role is the part this process holds: leader, follower or single.
func (a *App) Role() string {
	switch {
	case !a.lead.enabled:
		return RoleSingle
	case a.lead.leading.Load():
		return RoleLeader
	default:
		return RoleFollower
	}
}

// leaderIdentity names this replica in the Lease; a random suffix keeps a
// restarted process from being taken for the one before it.
func leaderIdentity(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	base := os.Getenv("POD_NAME")
	if base == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("leaderElection.identity: %w", err)
		}
		base = h
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base + "_" + hex.EncodeToString(b), nil
}

// leaseLock is the Lease the replicas compete for, in api.namespace.
func (a *App) leaseLock() (resourcelock.Interface, error) {
	rc := rest.CopyConfig(a.rest)
	rest.AddUserAgent(rc, "leader-election")
	// One hung request must not cost the lease (controller-runtime's rule).
	rc.Timeout = max(a.Config.LeaderElectionRenewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, a.Config.Namespace, a.Config.LeaderElectionID,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: a.lead.identity})
}

// leading marks this replica leader while the Manager runs its leader-only work.
func (a *App) leading(ctx context.Context) error {
	a.lead.leading.Store(true)
	a.Log.Info("elected leader: running the controllers, schedules and probes", "identity", a.lead.identity)
	<-ctx.Done()
	a.lead.leading.Store(false)
	return nil
}

// leaderHealthFunc reports the election (always UP: a follower is healthy); nil without one.
func (a *App) leaderHealthFunc() func() platform.LeaderElection {
	if !a.lead.enabled {
		return nil
	}
	return func() platform.LeaderElection {
		return platform.LeaderElection{Role: a.Role(), Identity: a.lead.identity}
	}
}
