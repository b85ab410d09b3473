package app

import (
	"github.com/validator-manager/validator-manager/impl/idp"
	"github.com/validator-manager/validator-manager/impl/platform"
)

// health is what /actuator/health reports: the database, the cluster, the file stores.
func (a *App) health() map[string]platform.Pinger {
	h := map[string]platform.Pinger{"db": a.Store, "cluster": clusterHealth{a}}
	if a.Sandbox != nil {
		h["sandbox"] = a.Sandbox
	}
	if l, ok := a.Identity.(*idp.Local); ok {
		h["identityProvider"] = l
	}
	return h
}
