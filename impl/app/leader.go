package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/platform"
)

// Roles a replica reports in /actuator/health.
const (
	// RoleLeader runs the controllers, schedules and probes.
	RoleLeader = "leader"
	// RoleFollower serves the API only; its writes reach the leader.
	RoleFollower = "follower"
	// RoleSingle is a process without leader election (the embedded
	// default): it does everything.
	RoleSingle = "single"
)

// RequeueAnnotation is what a replica that does not lead writes on a
// Validator resource to have the leader reconcile it: the leader's gateway
// informer sees the update and enqueues the validator. Its value is the time
// of the request.
const RequeueAnnotation = "validator-manager.io/reconcile-requested-at"

// leadership is this process's part in the election.
type leadership struct {
	enabled  bool
	identity string
	leading  atomic.Bool
}

func (l *leadership) role() string {
	switch {
	case !l.enabled:
		return RoleSingle
	case l.leading.Load():
		return RoleLeader
	default:
		return RoleFollower
	}
}

// Role is the part this process holds: leader, follower or single.
func (a *App) Role() string { return a.lead.role() }

// leaderIdentity names this replica in the Lease: the configured identity,
// else the pod's name (POD_NAME, from the downward API), else the hostname;
// a random suffix keeps a restarted process from being taken for the one
// before it while its lease has not expired.
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

// leaseLock is the Lease the replicas compete for, in api.namespace, held
// under this replica's identity.
func (a *App) leaseLock() (resourcelock.Interface, error) {
	rc := rest.CopyConfig(a.rest)
	rest.AddUserAgent(rc, "leader-election")
	// One hung request must not cost the lease (controller-runtime's rule).
	rc.Timeout = max(a.Config.LeaderElectionRenewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	coord, err := coordinationv1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, a.Config.Namespace, a.Config.LeaderElectionID,
		core, coord, resourcelock.ResourceLockConfig{Identity: a.lead.identity})
}

// leading is the leader-elected runnable that marks this replica leader
// while the Manager runs its leader-only work.
func (a *App) leading(ctx context.Context) error {
	a.lead.leading.Store(true)
	a.Log.Info("elected leader: running the controllers, schedules and probes", "identity", a.lead.identity)
	<-ctx.Done()
	a.lead.leading.Store(false)
	return nil
}

// forwarder carries an enqueue from a replica that does not lead to the
// leader: a merge patch of RequeueAnnotation on the validator's resource,
// which the leader's informer sees. Without a resource (a validator the
// cluster does not have yet) the leader's periodic resync picks the change
// up.
func (a *App) forwarder() (func(name string), error) {
	dyn, err := dynamic.NewForConfig(a.rest)
	if err != nil {
		return nil, err
	}
	res := dyn.Resource(cluster.ValidatorResource).Namespace(a.Config.Namespace)
	return func(name string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			RequeueAnnotation: time.Now().UTC().Format(time.RFC3339Nano),
		}}})
		_, err := res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "validator-manager-follower"})
		if err != nil && !apierrors.IsNotFound(err) {
			a.Log.Warn("could not hand a change to the leader; its resync will pick it up", "validator", name, "error", err)
		}
	}, nil
}

// leaderHealth is the health body's leaderElection component: always UP
// (a follower is healthy), with the role in its details.
func (a *App) leaderHealth() platform.LeaderElection {
	return platform.LeaderElection{Role: a.Role(), Identity: a.lead.identity}
}

// leaderHealthFunc is what health reports of the election; nil without one.
func (a *App) leaderHealthFunc() func() platform.LeaderElection {
	if !a.lead.enabled {
		return nil
	}
	return a.leaderHealth
}
