package idp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// No production path deletes a validator's wallet user or clients by
// claim; the tests undo their creates with these.

// DeleteWalletUser removes <validator>_walletuser if it carries claim; an
// absent user, or one of another claim, is left as it is.
func (l *Local) DeleteWalletUser(ctx context.Context, validator, claim string) error {
	username, err := walletUsername(validator)
	if err != nil {
		return err
	}
	return l.locked(func() error {
		i := slices.IndexFunc(l.users, func(x localUser) bool { return x.Username == username })
		if i < 0 || claim == "" || l.users[i].Claim != claim {
			return nil
		}
		return l.deleteUser(l.users[i].ID)
	})
}

// DeleteClients removes the validator's clients that carry claim; absent
// ones, and those of another claim, are left as they are.
func (l *Local) DeleteClients(_ context.Context, validator, claim string) error {
	specs, _, err := validatorClients(validator, l.uis)
	if err != nil {
		return err
	}
	return l.locked(func() error {
		next := slices.DeleteFunc(slices.Clone(l.clients), func(c localClient) bool {
			return claim != "" && c.Claim == claim && slices.ContainsFunc(specs, func(s clientSpec) bool { return s.id == c.ClientID })
		})
		if len(next) == len(l.clients) {
			return nil
		}
		if err := l.save(l.users, next); err != nil {
			return fmt.Errorf("identity provider: delete clients of %q: %w", validator, err)
		}
		l.clients = next
		return nil
	})
}

// DeleteWalletUser deletes <validator>_walletuser if it carries claim (a
// user created by another create, or by someone else, is left alone); an
// absent user is not an error.
func (k *Keycloak) DeleteWalletUser(ctx context.Context, validator, claim string) error {
	username, err := walletUsername(validator)
	if err != nil {
		return err
	}
	u, err := k.find(ctx, username)
	if err != nil {
		return k.fail(ctx, fmt.Sprintf("find user %q", username), err)
	}
	if !userCarries(u, claim) {
		return nil
	}
	return k.DeleteUser(ctx, *u.ID)
}

// DeleteClients deletes the validator's clients that carry claim (Keycloak
// removes a client's service-account user with it); absent ones, and those
// of another claim, are left as they are.
func (k *Keycloak) DeleteClients(ctx context.Context, validator, claim string) error {
	specs, _, err := validatorClients(validator, k.uis)
	if err != nil {
		return err
	}
	for _, s := range specs {
		c, err := k.findClient(ctx, s.id)
		if err != nil {
			return k.fail(ctx, fmt.Sprintf("find client %q", s.id), err)
		}
		if c == nil || !carries(c.Attributes, claim) {
			continue
		}
		err = k.do(ctx, func(token string) error {
			return k.client.DeleteClient(ctx, token, k.realm, url.PathEscape(*c.ID))
		})
		if err != nil && !hasStatus(err, http.StatusNotFound) {
			return k.fail(ctx, fmt.Sprintf("delete client %q", s.id), err)
		}
	}
	return nil
}
