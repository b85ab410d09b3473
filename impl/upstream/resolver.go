package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
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
	// Release, in chart mode, is the namespace of a validator's release,
	// whose Services Splice's charts name without the validator; nil: the
	// built-in layout's.
	Release func(validator string) string
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
	prefix, ns := name, r.Namespace
	if r.Release != nil {
		prefix, ns = "", r.Release(name)
	}
	t := Target{
		Validator:       name,
		MigrationID:     int64(v.MigrationID),
		LedgerURL:       domain.JSONAPIURL(prefix, ns),
		AdminAddress:    domain.AdminAPIAddress(prefix, ns),
		AdminTLS:        r.AdminTLS,
		ValidatorAppURL: domain.ValidatorAppURL(prefix, ns),
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

// Resources reads validators' Validator resources (any Validator of the
// namespace, as release 2.0 lists them): the cluster gateway (cluster.Kube).
type Resources interface {
	// TypedValidator reads the Validator resource; domain.ErrNotFound when
	// there is none.
	TypedValidator(ctx context.Context, name string) (*v1alpha1.Validator, error)
}

// ResourceRecords reads a validator's record from its Validator resource,
// so that a validator created with kubectl or by GitOps, which has no
// database row, resolves like one created through the API.
type ResourceRecords struct{ Resources Resources }

// GetValidator implements Records.
func (r ResourceRecords) GetValidator(ctx context.Context, name string) (domain.Validator, error) {
	v, err := r.Resources.TypedValidator(ctx, name)
	if err != nil {
		return domain.Validator{}, err
	}
	spec, err := v1alpha1.EncodeValidatorConfig(v.Spec.Config)
	if err != nil {
		return domain.Validator{}, domain.Internal(err)
	}
	return domain.Validator{Name: name, MigrationID: v.Spec.Migration.ID, Migrating: v.Spec.Migration.Migrating,
		CustomAuth: v.Spec.CustomAuth, ExternalDatabase: v.Spec.ExternalDatabase, Spec: spec}, nil
}
