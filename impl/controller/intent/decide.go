package intent

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// The decisions of a reconcile: pure functions of the row, the cache and
// the cluster's password key.

// identityWork is what the identity provider is asked for a validator.
type identityWork struct {
	// Provider: the identity provider serves the validator (no custom auth).
	Provider bool
	// WalletUser: the wallet user is made with Password, the temporary
	// password the create answered, derived again from the key.
	WalletUser bool
	Password   string
	// Clients: the clients are made (or adopted), the row not recording
	// them whole or with the UI addresses of now.
	Clients bool
}

// decideIdentity is what the identity provider must make for v: what the
// row has not recorded yet, nothing with custom authentication.
func decideIdentity(v domain.Validator, key []byte, uis Identity) identityWork {
	if v.CustomAuth {
		return identityWork{}
	}
	p := v.ProvisionedAuth
	wallet, ans := uis.UIURLs(v.Name)
	w := identityWork{Provider: true, Clients: p == nil || !p.Complete() || p.WalletURL != wallet || p.NameServiceURL != ans}
	if v.WalletUserID == "" {
		w.WalletUser = true
		w.Password = keyring.TemporaryPassword(key, v.Name, v.IdentityClaim())
	}
	return w
}

// desiredResource is v as its resource is applied: without custom auth,
// its auth is made from the row's ids and the provider's endpoints now.
func desiredResource(v domain.Validator, e domain.AuthEndpoints) (domain.Validator, error) {
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
		JWKSURL:           domain.NonZero(e.JWKS),
		OIDCAuthorityURL:  domain.NonZero(e.Authority),
		OIDCConfigURL:     domain.NonZero(e.Config),
	}
	v.Spec, err = domain.EncodeValidatorConfig(cfg)
	return v, err
}

// secretWork is what a reconcile writes into a validator's Secrets.
type secretWork struct {
	// Given replace what the Secrets hold: the values the row recorded.
	Given domain.ValidatorSecrets
	// Defaults fill in missing Secrets or keys, never over a value.
	Defaults domain.SecretDefaults
	// ClientSecret: the ledger API client's Secret is missing; the
	// provider's secret fills it (Defaults, once read).
	ClientSecret bool
	// Clear: the row's values are cleared once written.
	Clear bool
	// Unsealable: the row's values no longer open (the key was replaced).
	Unsealable bool
	// OperatorPassword: the database Secret is missing and its password
	// was the operator's, which exists nowhere else: none is made up.
	OperatorPassword bool
}

// secrets tells which Secrets w writes.
func (w secretWork) secrets() domain.WrittenSecrets {
	s := w.Given.Written()
	s.LedgerAPIAuth = s.LedgerAPIAuth || w.Defaults.LedgerAPIClientSecret != nil || w.ClientSecret
	s.Database = s.Database || w.Defaults.DatabasePassword != nil
	return s
}

func (w secretWork) writes() bool {
	return w.secrets() != (domain.WrittenSecrets{})
}

// decideSecrets is what v's Secrets get, given which exist (have, from the
// cache, so that a reconcile in step asks nothing of anyone). Without
// custom auth the ledger API client's secret is the provider's, never the
// request's.
func decideSecrets(v domain.Validator, key []byte, have domain.WrittenSecrets) (secretWork, error) {
	var w secretWork
	if v.PendingSecrets != "" {
		w.Clear = true
		s, err := keyring.Open(key, v.Name, v.IdentityClaim(), v.PendingSecrets)
		switch {
		case errors.Is(err, keyring.ErrUnsealable):
			w.Unsealable = true
		case err != nil:
			return secretWork{}, err
		default:
			if !v.CustomAuth {
				s.LedgerAPIClientSecret = ""
			}
			w.Given = s
		}
	}
	written := w.Given.Written()
	if !have.Database && !written.Database {
		cfg, err := v.Config()
		switch {
		case err == nil && cfg.WrittenSecrets.Database:
			w.OperatorPassword = true
		case v.ExternalDatabase:
			w.Defaults.DatabasePassword = new(string)
		default:
			password := keyring.DatabasePassword(key, v.Name, v.IdentityClaim())
			w.Defaults.DatabasePassword = &password
		}
	}
	w.ClientSecret = !v.CustomAuth && v.ProvisionedAuth != nil && !have.LedgerAPIAuth && !written.LedgerAPIAuth
	return w, nil
}

// stateToCopy is the cluster's state for v when it differs from the row's:
// list filters and pages run in the database.
func stateToCopy(v domain.Validator, st domain.ValidatorState, cached bool) (domain.ValidatorState, bool) {
	return st, cached && (st.Phase != v.Phase || st.DisableUserEdit != v.Immutable)
}

// Reasons of the Provisioned condition (v1alpha1.ConditionProvisioned).
const (
	// ReasonWalletUserConflict: a wallet user of the name not this validator's.
	ReasonWalletUserConflict = "WalletUserConflict"
	// ReasonClientConflict: a client of the validator's not made for it.
	ReasonClientConflict = "ClientConflict"
	// ReasonIdentityProviderUnavailable: retried with backoff.
	ReasonIdentityProviderUnavailable = "IdentityProviderUnavailable"
	// ReasonSecretsUnsealable: shown until an edit gives secret values again.
	ReasonSecretsUnsealable = "SecretsUnsealable"
	// ReasonDatabasePasswordMissing: the operator's password's Secret is gone.
	ReasonDatabasePasswordMissing = "DatabasePasswordMissing"
	// ReasonProvisioned: a failure shown before is over.
	ReasonProvisioned = "Provisioned"
)

// provisionFailure is a failure the Provisioned condition shows; its
// message never holds a secret value.
type provisionFailure struct {
	Reason string
	err    error
}

func (f *provisionFailure) Error() string { return f.err.Error() }
func (f *provisionFailure) Unwrap() error { return f.err }

// decideProvisioned is the Provisioned condition to write, nil for none: a
// *provisionFailure shows False; once none is left, a False shown turns
// True, and a validator that never failed gets none. Dropped secret values
// stay shown until an edit gives values again: the row no longer has them.
func decideProvisioned(identity error, secrets secretWork, shown *metav1.Condition) *metav1.Condition {
	failed := func(reason, message string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionProvisioned, Status: metav1.ConditionFalse, Reason: reason, Message: message}
	}
	var f *provisionFailure
	switch {
	case errors.As(identity, &f):
		return failed(f.Reason, f.Error())
	case identity != nil:
		return nil // not the identity provider's: retried, shown as it was
	case secrets.Unsealable:
		return failed(ReasonSecretsUnsealable, "the secret values recorded for this validator do not open under the cluster's password key and were dropped; give them again with an edit")
	case secrets.OperatorPassword:
		return failed(ReasonDatabasePasswordMissing, "the database Secret is missing and its password was the operator's: restore the Secret, or give a new password with an edit")
	case shown == nil || shown.Status != metav1.ConditionFalse:
		return nil
	case shown.Reason == ReasonSecretsUnsealable && secrets.Given == (domain.ValidatorSecrets{}):
		return nil
	}
	return &metav1.Condition{Type: v1alpha1.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: ReasonProvisioned,
		Message: "the identity provider's user and clients and the validator's Secrets are provisioned"}
}
