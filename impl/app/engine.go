package app

import (
	"context"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/engine"
	"github.com/validator-manager/validator-manager/impl/management"
)

// engineDown is the answer to a request while the control plane is down.
func engineDown(err error) error {
	if err != nil {
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
	return engineGated{Kube: a.Cluster, engine: a.Engine}
}

type engineGated struct {
	*cluster.Kube
	engine *engine.Engine
}

func (g engineGated) CheckReferences(ctx context.Context, refs domain.References) error {
	if err := engineDown(g.engine.Up(ctx)); err != nil {
		return err
	}
	return g.Kube.CheckReferences(ctx, refs)
}
