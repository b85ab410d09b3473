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

// managementCluster is release 1.11's: on the embedded default, a reference
// check answers 503 while the control plane is down, recording nothing.
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
