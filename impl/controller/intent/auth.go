package intent

import (
	"context"
	"errors"
	"fmt"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// provisionAuth makes the identity provider's clients of a validator
// without custom authentication once, and records them in the row (ids
// only), so that later reconciles need not ask the identity provider. A
// crash before the record is healed by the next call, which adopts the
// clients that carry the validator's claim.
func (c *Controller) provisionAuth(ctx context.Context, v *domain.Validator) error {
	if v.CustomAuth || (v.ProvisionedAuth != nil && v.ProvisionedAuth.Complete()) {
		return nil
	}
	a, err := c.identity.ProvisionClients(ctx, v.Name, v.IdentityClaim())
	if errors.Is(err, domain.ErrConflict) {
		return domain.Invalid("name", "the identity provider already has a client of validator %s that it did not make for it: %v", v.Name, err)
	}
	if err != nil {
		return fmt.Errorf("create the identity provider's clients: %w", err)
	}
	faultpoint.Reach("auth.provisioned")
	if err := c.store.SetProvisionedAuth(ctx, v.Name, a); err != nil {
		return err
	}
	v.ProvisionedAuth = &a
	return nil
}

// withAuth is v with its configuration's auth made from what the identity
// provider provisioned and its endpoints now, when v has no custom
// authentication; the row keeps only the ids, the cluster gets the whole.
func withAuth(v domain.Validator, e domain.AuthEndpoints) (domain.Validator, error) {
	if v.CustomAuth || v.ProvisionedAuth == nil || len(v.Spec) == 0 {
		return v, nil
	}
	cfg, err := v.Config()
	if err != nil {
		return v, err
	}
	p := v.ProvisionedAuth
	cfg.Auth = &domain.Auth{
		Audience:          p.Audience,
		NameServiceClient: p.NameServiceClient,
		LedgerAPIClient:   p.LedgerAPIClient,
		LedgerAPIUser:     p.LedgerAPIUser,
		WalletClient:      p.WalletClient,
		WalletUser:        v.WalletUserID,
		JWKSURL:           optional(e.JWKS),
		OIDCAuthorityURL:  optional(e.Authority),
		OIDCConfigURL:     optional(e.Config),
	}
	if v.Spec, err = domain.EncodeValidatorConfig(cfg); err != nil {
		return v, err
	}
	return v, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// requestSecrets are the secret values of a create that the cluster gets:
// without custom authentication the ledger API client's secret is the
// identity provider's, never one from the request.
func requestSecrets(v domain.Validator, s domain.ValidatorSecrets) domain.ValidatorSecrets {
	if !v.CustomAuth {
		s.LedgerAPIClientSecret = ""
	}
	return s
}

// defaults are the values of every Secret the validator's pods reference
// that is missing or lacks its key, given that those in written are being
// written: the database password (generated for an internal database;
// empty for an external one whose operator gave none) and, without custom
// authentication, the ledger API client's secret from the identity
// provider. A Secret that exists is never replaced (an edit that gives a
// value does that). The cache says what is missing, so a reconcile in step
// asks nothing of the API server or the identity provider.
func (c *Controller) defaults(ctx context.Context, v domain.Validator, written domain.WrittenSecrets) (domain.SecretDefaults, error) {
	have := c.cluster.CachedSecrets(v.Name)
	have.Database = have.Database || written.Database
	have.LedgerAPIAuth = have.LedgerAPIAuth || written.LedgerAPIAuth
	var d domain.SecretDefaults
	if !have.Database {
		password, ok, err := c.databasePassword(ctx, v)
		if err != nil {
			return d, err
		}
		if ok {
			d.DatabasePassword = &password
		}
	}
	if !v.CustomAuth && v.ProvisionedAuth != nil && !have.LedgerAPIAuth {
		secret, err := c.identity.ClientSecret(ctx, v.Name, v.IdentityClaim())
		if err != nil {
			return d, fmt.Errorf("read the ledger API client's secret: %w", err)
		}
		d.LedgerAPIClientSecret = &secret
	}
	return d, nil
}

// databasePassword is the value of a validator's missing database Secret:
// empty for an external database whose operator gave none, derived for an
// internal one. A password the operator gave exists only in the Secret:
// none is made up (the database keeps the operator's), and the status names
// the missing Secret until the operator restores it or edits the password.
func (c *Controller) databasePassword(ctx context.Context, v domain.Validator) (string, bool, error) {
	if cfg, err := v.Config(); err == nil && cfg.WrittenSecrets.Database {
		c.log.Warn("the database Secret of a validator is missing and its password was the operator's: restore the Secret, or give a new password with an edit",
			"validator", v.Name, "secret", domain.DatabaseSecretName(v.Name))
		return "", false, nil
	}
	if v.ExternalDatabase {
		return "", true, nil
	}
	key, err := c.passwordKey(ctx)
	if err != nil {
		return "", false, fmt.Errorf("the key of generated database passwords: %w", err)
	}
	return keyring.DatabasePassword(key, v.Name, v.IdentityClaim()), true, nil
}

// passwordKey is the cluster's key of generated passwords, read once.
func (c *Controller) passwordKey(ctx context.Context) ([]byte, error) {
	c.keyMu.Lock()
	defer c.keyMu.Unlock()
	if c.key == nil {
		key, err := c.cluster.PasswordKey(ctx)
		if err != nil {
			return nil, err
		}
		c.key = key
	}
	return c.key, nil
}
