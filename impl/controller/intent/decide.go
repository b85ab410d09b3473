package intent

import (
	"errors"

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

// uiAddresses say where a validator's UIs are now (Identity.UIURLs).
type uiAddresses interface {
	UIURLs(validator string) (wallet, nameService string)
}

// decideIdentity is what the identity provider must make for v: what the
// row has not recorded yet, nothing with custom authentication.
func decideIdentity(v domain.Validator, key []byte, uis uiAddresses) identityWork {
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

// writes tells whether any Secret is written.
func (w secretWork) writes() bool {
	return w.Given != (domain.ValidatorSecrets{}) || w.Defaults != (domain.SecretDefaults{}) || w.ClientSecret
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
