package intent

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// The decisions of a reconcile are pure functions of the validator's row,
// what the cache shows and the cluster's password key; Reconcile reads
// their inputs, carries them out and records the outcome.

// identityWork is what the identity provider is asked for a validator.
type identityWork struct {
	// Provider: the identity provider serves the validator (it has no
	// custom authentication); the outcome is recorded in the row.
	Provider bool
	// WalletUser: the wallet user is made (or adopted by the validator's
	// claim) with Password, the temporary password the create answered,
	// derived again from the cluster's key, the name and the claim.
	WalletUser bool
	Password   string
	// Clients: the identity provider's clients are made (or adopted) and
	// recorded in the row, which has not recorded them whole yet, or
	// recorded other UI addresses than the provider gives them now (the
	// existing clients get the new redirect URIs and web origins).
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

// desiredResource is v as its Validator resource is applied: without custom
// authentication its configuration's auth is made from what the identity
// provider provisioned and its endpoints now; the row keeps only the ids,
// the cluster gets the whole.
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
	// Given replace what the Secrets hold: the values a create or an edit
	// recorded, sealed, in the row.
	Given domain.ValidatorSecrets
	// Defaults fill in the Secrets (or their keys) that are missing, never
	// over a value, and never one that Given writes.
	Defaults domain.SecretDefaults
	// ClientSecret: the ledger API client's Secret is missing and the
	// identity provider's secret of that client fills it (Defaults, once
	// read).
	ClientSecret bool
	// Clear: the row's values are cleared once written, if it still holds
	// them (an edit recorded meanwhile keeps its own).
	Clear bool
	// Unsealable: the row's values no longer open (the key was replaced)
	// and are dropped: the operator gives them again.
	Unsealable bool
	// OperatorPassword: the database Secret is missing and its password
	// was the operator's, which exists nowhere else: none is made up.
	OperatorPassword bool
}

// secrets tells which Secrets w writes (the ledger API client's too when
// its secret is yet to be read).
func (w secretWork) secrets() domain.WrittenSecrets {
	s := w.Given.Written()
	s.LedgerAPIAuth = s.LedgerAPIAuth || w.Defaults.LedgerAPIClientSecret != nil || w.ClientSecret
	s.Database = s.Database || w.Defaults.DatabasePassword != nil
	return s
}

// writes tells whether any Secret is written.
func (w secretWork) writes() bool {
	return w.secrets() != (domain.WrittenSecrets{})
}

// decideSecrets is what v's Secrets get, given which of them exist with
// their key (have, from the cache, so that a reconcile in step asks nothing
// of the API server or the identity provider):
//   - the values the row records, opened with key; without custom
//     authentication the ledger API client's secret is the identity
//     provider's, never one from the request;
//   - a missing database Secret: the password derived from key for an
//     internal database, empty for an external one whose operator gave
//     none, none at all when the operator gave it;
//   - a missing ledger API client's Secret, without custom
//     authentication: the identity provider's client secret.
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

// stateToCopy is the state the cluster reports for v when it differs from
// the row's phase or edit flag: the row is where list filters and pages,
// which run in the database, see it.
func stateToCopy(v domain.Validator, st domain.ValidatorState, cached bool) (domain.ValidatorState, bool) {
	return st, cached && (st.Phase != v.Phase || st.DisableUserEdit != v.Immutable)
}

// Reasons of the Provisioned condition (v1alpha1.ConditionProvisioned).
const (
	// ReasonWalletUserConflict: the identity provider has a wallet user of
	// the validator's name that this validator did not create.
	ReasonWalletUserConflict = "WalletUserConflict"
	// ReasonClientConflict: the identity provider has a client of the
	// validator's that it did not make for it.
	ReasonClientConflict = "ClientConflict"
	// ReasonIdentityProviderUnavailable: the identity provider failed or
	// could not be reached; retried with backoff.
	ReasonIdentityProviderUnavailable = "IdentityProviderUnavailable"
	// ReasonSecretsUnsealable: the secret values a create or an edit
	// recorded no longer open under the cluster's key and were dropped;
	// shown until an edit gives secret values again.
	ReasonSecretsUnsealable = "SecretsUnsealable"
	// ReasonDatabasePasswordMissing: the database Secret is missing and its
	// password was the operator's: restore it, or give one with an edit.
	ReasonDatabasePasswordMissing = "DatabasePasswordMissing"
	// ReasonProvisioned: a failure shown before is over.
	ReasonProvisioned = "Provisioned"
)

// provisionFailure is a failure of provisioning that the validator's
// Provisioned condition shows: Reason, and err (whose message is the
// condition's; it never holds a secret value).
type provisionFailure struct {
	Reason string
	err    error
}

func (f *provisionFailure) Error() string { return f.err.Error() }
func (f *provisionFailure) Unwrap() error { return f.err }

// decideProvisioned is the Provisioned condition v's resource is to carry,
// nil when nothing is to be written: identity is the identity provider's
// outcome (a *provisionFailure shows; other errors, the database's, do
// not), secrets what the Secrets get, shown the condition the resource
// carries now (nil: none). A failure shows as False with its reason; once
// none is left, a condition shown False becomes True (reason Provisioned),
// and a validator that never failed gets none. Dropped secret values stay
// shown until an edit gives values again: the row no longer records them.
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
