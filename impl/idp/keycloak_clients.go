package idp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/Nerzal/gocloak/v13"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Keycloak's audience mapper puts a fixed string into the aud claim.
const (
	audienceMapperType = "oidc-audience-mapper"
	audienceMapperName = "validator audience"
)

// UIURLs are the addresses of validator's UIs that its clients are given.
func (k *Keycloak) UIURLs(validator string) (wallet, nameService string) {
	return k.uis.URLs(validator)
}

// Endpoints are the realm's URLs as the validators' pods reach them
// (KeycloakConfig.PublicURL, else BaseURL).
func (k *Keycloak) Endpoints() domain.AuthEndpoints { return RealmEndpoints(k.publicURL, k.realm) }

// ProvisionClients makes the validator's clients, each with the claim and the
// audience mapper in its create request (one transaction in Keycloak), and
// adopts those that carry claim; one without it is a conflict.
func (k *Keycloak) ProvisionClients(ctx context.Context, validator, claim string) (domain.ProvisionedAuth, error) {
	specs, provisioned, err := validatorClients(validator, k.uis)
	if err != nil {
		return domain.ProvisionedAuth{}, err
	}
	for _, s := range specs {
		id, err := k.ensureClient(ctx, s, claim)
		if err != nil {
			return domain.ProvisionedAuth{}, err
		}
		if !s.confidential {
			continue
		}
		if provisioned.LedgerAPIUser, err = k.serviceAccount(ctx, id); err != nil {
			return domain.ProvisionedAuth{}, k.fail(ctx, fmt.Sprintf("read the service account of client %q", s.id), err)
		}
	}
	return provisioned, nil
}

// ensureClient creates the client of s or adopts the one that carries claim
// (with the redirect URIs and web origins of s), and returns its Keycloak id.
func (k *Keycloak) ensureClient(ctx context.Context, s clientSpec, claim string) (string, error) {
	op := fmt.Sprintf("create client %q", s.id)
	if claim == "" {
		return "", domain.Invalid("claim", "a claim is required to create client %q", s.id)
	}
	c, err := k.findClient(ctx, s.id)
	if err != nil {
		return "", k.fail(ctx, op, err)
	}
	if c == nil {
		id, err := withToken(ctx, k, func(token string) (string, error) {
			return k.client.CreateClient(ctx, token, k.realm, clientRepresentation(s, claim))
		})
		switch {
		case err == nil && id != "":
			return id, nil
		case err != nil && !hasStatus(err, http.StatusConflict):
			return "", k.fail(ctx, op, err)
		}
		// Made meanwhile (409), or created without a Location header.
		if c, err = k.findClient(ctx, s.id); err != nil {
			return "", k.fail(ctx, op, err)
		}
		if c == nil {
			return "", k.fail(ctx, op, errors.New("keycloak created the client but it cannot be found"))
		}
	}
	if !carries(c.Attributes, claim) {
		return "", notOurs(s.id)
	}
	id := gocloak.PString(c.ID)
	if !s.confidential && (!slices.Equal(gocloak.PStringSlice(c.RedirectURIs), s.redirectURIs) ||
		!slices.Equal(gocloak.PStringSlice(c.WebOrigins), s.webOrigins)) {
		// Keycloak's update sets only the fields the representation
		// carries: the rest of the client stays as it is.
		update := gocloak.Client{ID: c.ID, ClientID: c.ClientID, RedirectURIs: nonNil(s.redirectURIs), WebOrigins: nonNil(s.webOrigins)}
		_, err := withToken(ctx, k, func(token string) (struct{}, error) {
			return struct{}{}, k.client.UpdateClient(ctx, token, k.realm, update)
		})
		if err != nil {
			return "", k.fail(ctx, fmt.Sprintf("set the redirect URIs of client %q", s.id), err)
		}
	}
	if !hasAudienceMapper(c, s.audience) {
		_, err := withToken(ctx, k, func(token string) (string, error) {
			return k.client.CreateClientProtocolMapper(ctx, token, k.realm, url.PathEscape(id), audienceMapper(s.audience))
		})
		if err != nil && !hasStatus(err, http.StatusConflict) {
			return "", k.fail(ctx, fmt.Sprintf("add the audience mapper to client %q", s.id), err)
		}
	}
	return id, nil
}

// clientRepresentation is the create request of s.
func clientRepresentation(s clientSpec, claim string) gocloak.Client {
	return gocloak.Client{
		ClientID:                  gocloak.StringP(s.id),
		Protocol:                  gocloak.StringP("openid-connect"),
		Enabled:                   gocloak.BoolP(true),
		PublicClient:              gocloak.BoolP(!s.confidential),
		ServiceAccountsEnabled:    gocloak.BoolP(s.confidential),
		StandardFlowEnabled:       gocloak.BoolP(!s.confidential),
		DirectAccessGrantsEnabled: gocloak.BoolP(s.passwordGrant),
		RedirectURIs:              nonNil(s.redirectURIs),
		WebOrigins:                nonNil(s.webOrigins),
		Attributes:                &map[string]string{ClaimAttribute: claim},
		ProtocolMappers:           &[]gocloak.ProtocolMapperRepresentation{audienceMapper(s.audience)},
	}
}

// nonNil is &v, an empty list for none: the representation then says
// "none" rather than "unchanged".
func nonNil(v []string) *[]string {
	if v == nil {
		v = []string{}
	}
	return &v
}

func audienceMapper(audience string) gocloak.ProtocolMapperRepresentation {
	return gocloak.ProtocolMapperRepresentation{
		Name:           gocloak.StringP(audienceMapperName),
		Protocol:       gocloak.StringP("openid-connect"),
		ProtocolMapper: gocloak.StringP(audienceMapperType),
		Config: &map[string]string{
			"included.custom.audience": audience,
			"access.token.claim":       "true",
			"id.token.claim":           "false",
		},
	}
}

func hasAudienceMapper(c *gocloak.Client, audience string) bool {
	return c.ProtocolMappers != nil && slices.ContainsFunc(*c.ProtocolMappers, func(m gocloak.ProtocolMapperRepresentation) bool {
		return gocloak.PString(m.ProtocolMapper) == audienceMapperType && m.Config != nil && (*m.Config)["included.custom.audience"] == audience
	})
}

func carries(attributes *map[string]string, claim string) bool {
	return claim != "" && attributes != nil && (*attributes)[ClaimAttribute] == claim
}

// findClient returns the client of exactly clientID, or nil.
func (k *Keycloak) findClient(ctx context.Context, clientID string) (*gocloak.Client, error) {
	clients, err := withToken(ctx, k, func(token string) ([]*gocloak.Client, error) {
		return k.client.GetClients(ctx, token, k.realm, gocloak.GetClientsParams{ClientID: gocloak.StringP(clientID)})
	})
	if err != nil {
		return nil, err
	}
	for _, c := range clients {
		if c != nil && gocloak.PString(c.ClientID) == clientID && gocloak.PString(c.ID) != "" {
			return c, nil
		}
	}
	return nil, nil
}

// serviceAccount is the id of the service-account user of the client of
// Keycloak id.
func (k *Keycloak) serviceAccount(ctx context.Context, id string) (string, error) {
	u, err := withToken(ctx, k, func(token string) (*gocloak.User, error) {
		return k.client.GetClientServiceAccount(ctx, token, k.realm, url.PathEscape(id))
	})
	if err != nil {
		return "", err
	}
	if gocloak.PString(u.ID) == "" {
		return "", errors.New("keycloak answered a service-account user without an id")
	}
	return *u.ID, nil
}

// ClientSecret reads the secret Keycloak keeps for the validator's ledger
// API client, when the client carries claim.
func (k *Keycloak) ClientSecret(ctx context.Context, validator, claim string) (string, error) {
	clientID := LedgerAPIClientID(validator)
	op := fmt.Sprintf("read the secret of client %q", clientID)
	c, err := k.findClient(ctx, clientID)
	switch {
	case err != nil:
		return "", k.fail(ctx, op, err)
	case c == nil:
		return "", domain.NotFound("identity provider client %q does not exist", clientID)
	case !carries(c.Attributes, claim):
		return "", notOurs(clientID)
	}
	cred, err := withToken(ctx, k, func(token string) (*gocloak.CredentialRepresentation, error) {
		return k.client.GetClientSecret(ctx, token, k.realm, url.PathEscape(*c.ID))
	})
	if err != nil {
		return "", k.fail(ctx, op, err)
	}
	if gocloak.PString(cred.Value) == "" {
		return "", fmt.Errorf("identity provider: %s: keycloak answered no secret", op)
	}
	return *cred.Value, nil
}
