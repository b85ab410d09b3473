package intent

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// Drift in the identity provider is healed: the leader looks again at what
// it made for each validator at most once every ObserveEvery, and at most
// observeRate validators a second (each look is a few admin API reads).
// The cache's resync brings the reconcile at which a due look is taken.
const (
	ObserveEvery = time.Minute
	observeRate  = 5
)

// drift remembers when each validator's identity was last looked at.
type drift struct {
	mu     sync.Mutex
	last   map[string]time.Time
	every  time.Duration
	budget *rate.Limiter
}

func newDrift(every time.Duration) *drift {
	if every <= 0 {
		every = ObserveEvery
	}
	return &drift{last: map[string]time.Time{}, every: every, budget: rate.NewLimiter(observeRate, observeRate)}
}

// due tells whether name's identity is to be looked at now, and counts the
// look. A first reconcile only starts the period: at start all would be due.
func (d *drift) due(name string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	last, seen := d.last[name]
	if !seen {
		d.last[name] = now
		return false
	}
	if now.Sub(last) < d.every || !d.budget.AllowN(now, 1) {
		return false
	}
	d.last[name] = now
	return true
}

// observeIdentity adds to w, when a look is due, what the provider lost: a
// deleted wallet user is made again (a new id), and the clients are
// provisioned again, which sets back what was changed by hand.
func (c *Controller) observeIdentity(ctx context.Context, v domain.Validator, key []byte, w *identityWork) error {
	if !w.Provider || v.ProvisionedAuth == nil || !c.drift.due(v.Name, time.Now()) {
		return nil
	}
	w.Clients = true
	if v.WalletUserID != "" && !w.WalletUser {
		ok, err := c.identity.UserExists(ctx, v.WalletUserID)
		if err != nil {
			return &provisionFailure{Reason: ReasonIdentityProviderUnavailable, err: err}
		}
		if !ok {
			c.log.Warn("the wallet user of a validator was deleted in the identity provider; it is made again with its temporary password", "validator", v.Name)
			w.WalletUser = true
			w.Password = keyring.TemporaryPassword(key, v.Name, v.IdentityClaim())
		}
	}
	return nil
}

// healClientSecret writes the secret of the ledger API client made anew
// into the validator's Secret.
func (c *Controller) healClientSecret(ctx context.Context, v domain.Validator) error {
	secret, err := c.identity.ClientSecret(ctx, v.Name, v.IdentityClaim())
	if err != nil {
		return &provisionFailure{Reason: ReasonIdentityProviderUnavailable, err: err}
	}
	c.log.Warn("the ledger API client of a validator was deleted in the identity provider and made again; its Secret gets the new secret", "validator", v.Name)
	return c.cluster.PutSecrets(ctx, v.Name, domain.ValidatorSecrets{LedgerAPIClientSecret: secret}, domain.SecretDefaults{})
}
