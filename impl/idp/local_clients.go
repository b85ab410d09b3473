package idp

import (
	"context"
	"crypto/subtle"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// localClient is one client as stored on disk. A confidential client's
// secret is kept as it is (the file is 0600): it is written again into the
// validator's Secret whenever that is missing, as Keycloak hands it out.
type localClient struct {
	ClientID string `json:"clientId"`
	Secret   string `json:"secret,omitempty"`
	// ServiceAccount is the id of the confidential client's
	// service-account user: the subject of its tokens.
	ServiceAccount string `json:"serviceAccountUser,omitempty"`
	Audience       string `json:"audience"`
	PasswordGrant  bool   `json:"passwordGrant,omitempty"`
	// RedirectURIs and WebOrigins of a public client, in Keycloak's form
	// (redirectAllowed).
	RedirectURIs []string  `json:"redirectUris,omitempty"`
	WebOrigins   []string  `json:"webOrigins,omitempty"`
	Claim        string    `json:"claim,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

// SetEndpoints says where the realm of this provider is served (the
// embedded default's token endpoint, which starts after the provider).
func (l *Local) SetEndpoints(e domain.AuthEndpoints) { l.endpoints.Store(&e) }

// UIURLs are the addresses of validator's UIs that its clients are given.
func (l *Local) UIURLs(validator string) (wallet, nameService string) { return l.uis.URLs(validator) }

// Endpoints are the realm's URLs; empty until SetEndpoints.
func (l *Local) Endpoints() domain.AuthEndpoints {
	if e := l.endpoints.Load(); e != nil {
		return *e
	}
	return domain.AuthEndpoints{}
}

// ProvisionClients makes the validator's clients at once, adopting those that
// carry claim with today's redirect URIs; one with another claim is a conflict.
func (l *Local) ProvisionClients(ctx context.Context, validator, claim string) (domain.ProvisionedAuth, error) {
	specs, provisioned, err := validatorClients(validator, l.uis)
	if err != nil {
		return domain.ProvisionedAuth{}, err
	}
	if err := ctx.Err(); err != nil {
		return domain.ProvisionedAuth{}, err
	}
	err = l.locked(func() error {
		next, changed := slices.Clone(l.clients), false
		for _, s := range specs {
			i := slices.IndexFunc(next, func(c localClient) bool { return c.ClientID == s.id })
			if i >= 0 && (claim == "" || next[i].Claim != claim) {
				return notOurs(s.id)
			}
			if i < 0 {
				c, err := l.newClient(s, claim)
				if err != nil {
					return fmt.Errorf("identity provider: create client %q: %w", s.id, err)
				}
				next = append(next, c)
				i = len(next) - 1
				changed = true
			}
			if !slices.Equal(next[i].RedirectURIs, s.redirectURIs) || !slices.Equal(next[i].WebOrigins, s.webOrigins) {
				next[i].RedirectURIs, next[i].WebOrigins = s.redirectURIs, s.webOrigins
				changed = true
			}
			if s.confidential {
				provisioned.LedgerAPIUser = next[i].ServiceAccount
			}
		}
		if changed {
			if err := l.save(l.users, next); err != nil {
				return fmt.Errorf("identity provider: create clients of %q: %w", validator, err)
			}
			l.clients = next
		}
		return nil
	})
	if err != nil {
		return domain.ProvisionedAuth{}, err
	}
	return provisioned, nil
}

func (l *Local) newClient(s clientSpec, claim string) (localClient, error) {
	c := localClient{ClientID: s.id, Audience: s.audience, PasswordGrant: s.passwordGrant, RedirectURIs: s.redirectURIs, WebOrigins: s.webOrigins,
		Claim: claim, CreatedAt: time.Now().UTC()}
	if s.confidential {
		secret, err := clientSecret()
		if err != nil {
			return localClient{}, err
		}
		c.Secret, c.ServiceAccount = secret, uuid.NewString()
	}
	return c, nil
}

// ClientSecret is the secret of the validator's ledger API client when it
// carries claim.
func (l *Local) ClientSecret(_ context.Context, validator, claim string) (string, error) {
	id := LedgerAPIClientID(validator)
	c, err := l.client(id)
	switch {
	case err != nil:
		return "", err
	case c == nil:
		return "", domain.NotFound("identity provider client %q does not exist", id)
	case claim == "" || c.Claim != claim:
		return "", notOurs(id)
	}
	return c.Secret, nil
}

// client is a copy of the client of clientID, nil where there is none.
func (l *Local) client(clientID string) (*localClient, error) {
	var c *localClient
	err := l.locked(func() error {
		if i := slices.IndexFunc(l.clients, func(c localClient) bool { return c.ClientID == clientID }); i >= 0 {
			c = new(localClient)
			*c = l.clients[i]
		}
		return nil
	})
	return c, err
}

// CheckClient authenticates a confidential client and answers its
// service-account user and audience. A wrong secret and an unknown client
// are the same domain error of code CodeUnauthenticated.
func (l *Local) CheckClient(_ context.Context, clientID, secret string) (subject, audience string, err error) {
	c, err := l.client(clientID)
	if err != nil {
		return "", "", err
	}
	if c == nil || c.Secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) != 1 {
		return "", "", &domain.Error{Code: domain.CodeUnauthenticated, Message: "invalid client credentials"}
	}
	return c.ServiceAccount, c.Audience, nil
}

// CheckRedirect answers a public client's audience when redirect is one of
// its redirect URIs (the authorization endpoint); anything else is an error
// of code CodeInvalid.
func (l *Local) CheckRedirect(_ context.Context, clientID, redirect string) (audience string, err error) {
	c, err := l.client(clientID)
	switch {
	case err != nil:
		return "", err
	case c == nil:
		return "", &domain.Error{Code: domain.CodeInvalid, Message: "Client not found."}
	case c.Secret != "":
		return "", &domain.Error{Code: domain.CodeInvalid, Message: "Wrong client protocol."}
	case !redirectAllowed(c.RedirectURIs, redirect):
		return "", &domain.Error{Code: domain.CodeInvalid, Message: "Invalid parameter: redirect_uri"}
	}
	return c.Audience, nil
}
