package intent

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// Drift in the identity provider is healed as it is for Secrets: the
// leader looks again at the wallet user and the clients it made for each
// validator, at most once every ObserveEvery per validator and at most
// observeRate validators a second against the provider's admin API (each
// look is a few reads: a user, three clients, a service account), and
// makes again what was deleted, and sets back what was changed, by hand.
// The cache's resync brings every validator to a reconcile every
// cluster.Resync, which is when a look that is due is taken.
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

// due tells whether name's identity is to be looked at now, and if so
// counts the look. The first reconcile of a validator in this process
// only starts its period: it has just been provisioned, or is one of the
// start's every validator, which would all be due at once.
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

// observeIdentity adds to w what the identity provider lost of what it
// made for v, when a look is due: a wallet user deleted by hand is made
// again (same name and temporary password, a new id, which the row and the
// Validator resource then carry), and the clients are provisioned again,
// which makes a deleted one anew and sets back redirect URIs, web origins
// and the audience mapper changed by hand (ProvisionClients adopts what
// carries the validator's claim and changes only what differs).
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

// healClientSecret writes the ledger API client's secret into the
// validator's Secret, whose value was the old client's: the client was made
// anew (its service-account user changed). provisionClients calls it
// before it records the new client in the row.
func (c *Controller) healClientSecret(ctx context.Context, v domain.Validator) error {
	secret, err := c.identity.ClientSecret(ctx, v.Name, v.IdentityClaim())
	if err != nil {
		return &provisionFailure{Reason: ReasonIdentityProviderUnavailable, err: err}
	}
	c.log.Warn("the ledger API client of a validator was deleted in the identity provider and made again; its Secret gets the new secret", "validator", v.Name)
	return c.cluster.PutSecrets(ctx, v.Name, domain.ValidatorSecrets{LedgerAPIClientSecret: secret}, domain.SecretDefaults{})
}
