package app

import (
	"github.com/validator-manager/validator-manager/impl/outbound"
)

// outboundPolicy is the policy of the addresses the server dials on a
// caller's behalf (README, "Outbound address policy").
func (a *App) outboundPolicy() *outbound.Policy {
	cfg := a.Config
	extra := outbound.SplitHosts(cfg.OutboundAllowedHosts)
	if cfg.EmbeddedDefault() {
		return outbound.Embedded(func(hostport string) bool { return a.Sandbox != nil && a.Sandbox.Owns(hostport) }, extra, cfg.OutboundAllowPrivate)
	}
	providers := []string{cfg.KeycloakURL, cfg.UpstreamTokenURL, cfg.JWKSURI}
	return outbound.Cluster(cfg.Namespace, providers, extra, cfg.OutboundAllowHTTP, cfg.OutboundAllowPrivate)
}

// validatorAddressPolicy checks a validator's addresses when written: on the
// embedded default they are never dialled, so only their form is checked.
func (a *App) validatorAddressPolicy() *outbound.Policy {
	if a.Config.EmbeddedDefault() {
		return &outbound.Policy{AnyHost: true, AllowPrivate: true}
	}
	return a.outboundPolicy()
}
