package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Records reads a validator's record (the configuration it was created with).
type Records interface {
	GetValidator(ctx context.Context, name string) (domain.Validator, error)
}

// SecretReader reads a validator's ledger API client secret from its Secret.
type SecretReader interface {
	LedgerAPIClientSecret(ctx context.Context, validator string) (string, error)
}

// ClusterResolver finds a validator's nodes by the Helm charts' service
// naming convention (domain/endpoints.go), its scan at the configuration's
// scanAddress, and its ledger API client's credentials in its Secret.
type ClusterResolver struct {
	Records   Records
	Secrets   SecretReader
	Namespace string
	// TokenURL is the token endpoint of validators that name no
	// oidcAuthorityUrl (config upstream.tokenUrl).
	TokenURL string
	// AdminTLS is the TLS configuration of the participants' admin APIs;
	// nil: plaintext.
	AdminTLS *tls.Config
}

// Resolve implements Resolver.
func (r ClusterResolver) Resolve(ctx context.Context, name string) (Target, error) {
	v, err := r.Records.GetValidator(ctx, name)
	if err != nil {
		return Target{}, err
	}
	cfg, err := v.Config()
	if err != nil {
		return Target{}, domain.Internal(err)
	}
	t := Target{
		Validator:       name,
		MigrationID:     int64(v.MigrationID),
		LedgerURL:       domain.JSONAPIURL(name, r.Namespace),
		AdminAddress:    domain.AdminAPIAddress(name, r.Namespace),
		AdminTLS:        r.AdminTLS,
		ValidatorAppURL: domain.ValidatorAppURL(name, r.Namespace),
		ScanURL:         strings.TrimSuffix(strings.TrimSuffix(cfg.Cluster.ScanAddress, "/"), "/api/scan"),
	}
	creds := Credentials{TokenURL: r.TokenURL}
	if a := cfg.Auth; a != nil {
		creds.ClientID, creds.Audience = a.LedgerAPIClient, a.Audience
		if a.OIDCAuthorityURL != nil && *a.OIDCAuthorityURL != "" {
			// Keycloak's token endpoint under the realm's authority URL.
			creds.TokenURL = strings.TrimSuffix(*a.OIDCAuthorityURL, "/") + "/protocol/openid-connect/token"
		}
	}
	secret, err := r.Secrets.LedgerAPIClientSecret(ctx, name)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		// No Secret: the nodes are called without a token (auth disabled).
		return t, nil
	case err != nil:
		return Target{}, err
	}
	if creds.ClientID == "" || creds.TokenURL == "" {
		return Target{}, domain.Unavailable("validator %q has a ledger API client secret but no client id or token endpoint (auth.ledgerApiClientId, auth.oidcAuthorityUrl or upstream.tokenUrl)", name)
	}
	creds.ClientSecret = secret
	t.Credentials = &creds
	return t, nil
}
