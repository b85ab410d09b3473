package app

import (
	"context"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/management"
)

// engineUp is nil unless the embedded control plane is down (a child
// exited and is being started again, or the API server is not ready:
// etcd away); cluster health is DOWN meanwhile.
func (a *App) engineUp(ctx context.Context) error {
	if a.Engine == nil {
		return nil
	}
	if err := a.Engine.Ping(ctx); err != nil {
		e := domain.Unavailable("cluster: the embedded control plane is unavailable and being restarted; try again shortly")
		e.Cause = err
		return e
	}
	return nil
}

// managementCluster is the cluster release 1.11 reads: on the embedded
// default, a create or an edit whose references it checks answers 503 at
// once while the control plane is down, instead of recording what cannot
// be provisioned.
func (a *App) managementCluster() management.Cluster {
	if a.Engine == nil {
		return a.Cluster
	}
	return engineGated{Kube: a.Cluster, up: a.engineUp}
}

type engineGated struct {
	*cluster.Kube
	up func(context.Context) error
}

func (g engineGated) CheckReferences(ctx context.Context, refs domain.References) error {
	if err := g.up(ctx); err != nil {
		return err
	}
	return g.Kube.CheckReferences(ctx, refs)
}
