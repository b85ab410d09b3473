package management

import (
	"context"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Addresses is the outbound address policy (impl/outbound): an address the
// server calls with credentials is refused when it is written, not only when
// it is dialled; a remote participant's only decides whether it is probed.
type Addresses interface {
	CheckURL(raw string) error
	CheckHost(host, port string) error
}

// checkConfig checks what a validator's configuration reaches outside the
// record: the cluster objects it references, and the addresses the server
// dials on a caller's behalf (the token endpoint receives the client secret).
func (s *Server) checkConfig(ctx context.Context, cfg domain.ValidatorConfig) error {
	var bad domain.Invalids
	if a := cfg.Cluster.ScanAddress; a != "" {
		if err := s.ValidatorAddresses.CheckURL(a); err != nil {
			bad = append(bad, domain.Invalid("clusterConfig.scanAddress", "%v", err))
		}
	}
	if cfg.Auth != nil && ptr.Deref(cfg.Auth.OIDCAuthorityURL, "") != "" {
		if err := s.ValidatorAddresses.CheckURL(*cfg.Auth.OIDCAuthorityURL); err != nil {
			bad = append(bad, domain.Invalid("auth.oidcAuthorityUrl", "%v", err))
		}
	}
	if len(bad) > 0 {
		return bad
	}
	return s.Cluster.CheckReferences(ctx, references(cfg))
}
