package management

import (
	"context"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Addresses is the outbound address policy (impl/outbound) as the handlers
// and the probe use it: an address the server calls with credentials is
// refused when it is written, not only when it is dialled; a remote
// participant's admin address only decides whether it is probed.
type Addresses interface {
	CheckURL(raw string) error
	CheckHost(host, port string) error
}

// checkConfig checks what a create or an edit leaves in a validator's
// configuration that reaches outside the record: the cluster objects it
// references, and the addresses the server dials on a caller's behalf: the
// scan (for balances and traffic) and the token endpoint under
// oidcAuthorityUrl, which receives the validator's client secret.
func (s *Server) checkConfig(ctx context.Context, cfg domain.ValidatorConfig) error {
	var bad domain.Invalids
	if a := cfg.Cluster.ScanAddress; a != "" {
		if err := s.ValidatorAddresses.CheckURL(a); err != nil {
			bad = append(bad, domain.Invalid("clusterConfig.scanAddress", "%v", err))
		}
	}
	if cfg.Auth != nil && deref(cfg.Auth.OIDCAuthorityURL) != "" {
		if err := s.ValidatorAddresses.CheckURL(*cfg.Auth.OIDCAuthorityURL); err != nil {
			bad = append(bad, domain.Invalid("auth.oidcAuthorityUrl", "%v", err))
		}
	}
	if len(bad) > 0 {
		return bad
	}
	return s.Cluster.CheckReferences(ctx, references(cfg))
}
