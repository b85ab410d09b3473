package management

import (
	"github.com/validator-manager/validator-manager/impl/domain"
)

// Addresses is the outbound address policy (impl/outbound) as the handlers
// use it: an address a request gives is refused when it is written, not
// only when it is dialled.
type Addresses interface {
	CheckURL(raw string) error
	CheckHost(host, port string) error
}

// checkValidatorAddresses checks the addresses of a validator's
// configuration that the server dials on a caller's behalf: the scan (for
// balances and traffic) and the token endpoint under oidcAuthorityUrl,
// which receives the validator's client secret.
func (s *Server) checkValidatorAddresses(cfg domain.ValidatorConfig) error {
	if s.validatorAddresses == nil {
		return nil
	}
	var bad domain.Invalids
	if a := cfg.Cluster.ScanAddress; a != "" {
		if err := s.validatorAddresses.CheckURL(a); err != nil {
			bad = append(bad, domain.Invalid("clusterConfig.scanAddress", "%s", refusal(err)))
		}
	}
	if cfg.Auth != nil && cfg.Auth.OIDCAuthorityURL != nil && *cfg.Auth.OIDCAuthorityURL != "" {
		if err := s.validatorAddresses.CheckURL(*cfg.Auth.OIDCAuthorityURL); err != nil {
			bad = append(bad, domain.Invalid("auth.oidcAuthorityUrl", "%s", refusal(err)))
		}
	}
	if len(bad) > 0 {
		return bad
	}
	return nil
}

// checkParticipantAddresses checks a remote participant's admin address,
// which the health probe dials. Its ledger and JSON API addresses are shown,
// never dialled by this server.
func (s *Server) checkParticipantAddresses(p domain.RemoteParticipant) error {
	if s.participantAddresses == nil {
		return nil
	}
	if err := s.participantAddresses.CheckHost(p.AdminAddress, p.AdminPort); err != nil {
		return domain.Invalid("adminAddress", "%s", refusal(err))
	}
	return nil
}

// refusal is the policy's answer as the 400 says it.
func refusal(err error) string { return err.Error() }
