package app

import (
	"github.com/validator-manager/validator-manager/impl/outbound"
)

// outboundPolicy is the policy of the addresses the server dials on a
// caller's behalf. In a cluster: the namespace's Services, the configured
// identity provider and token endpoints, and outbound.allowedHosts, over
// https unless outbound.allowHttp. On the embedded default: its own sandbox
// network and outbound.allowedHosts only.
func (a *App) outboundPolicy() *outbound.Policy {
	cfg := a.Config
	extra := outbound.SplitHosts(cfg.OutboundAllowedHosts)
	if cfg.EmbeddedDefault() {
		return outbound.Embedded(func(hostport string) bool { return a.Sandbox != nil && a.Sandbox.Owns(hostport) }, extra, cfg.OutboundAllowPrivate)
	}
	providers := []string{cfg.KeycloakURL, cfg.UpstreamTokenURL, cfg.JWKSURI}
	return outbound.Cluster(cfg.Namespace, providers, extra, cfg.OutboundAllowHTTP, cfg.OutboundAllowPrivate)
}

// validatorAddressPolicy checks a validator's scanAddress and
// oidcAuthorityUrl when written. On the embedded default the sandbox
// network stands in for every validator's nodes and these addresses are
// never dialled, so only their form is checked there.
func (a *App) validatorAddressPolicy() *outbound.Policy {
	if a.Config.EmbeddedDefault() {
		return &outbound.Policy{AnyHost: true, AllowPrivate: true}
	}
	return a.outboundPolicy()
}
