package idp

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// A validator without custom authentication gets three clients named after
// it: the validator app's confidential ledger API client, and the public
// clients of its wallet UI and name-service UI. Each puts the validator's own
// audience into its tokens, so that another's participant refuses them.
func LedgerAPIClientID(validator string) string   { return validator + "-validator-app" }
func WalletClientID(validator string) string      { return validator + "-wallet-ui" }
func NameServiceClientID(validator string) string { return validator + "-ans-ui" }
func Audience(validator string) string            { return validator + "-ledger-api" }

// clientSpec is one client of a validator.
type clientSpec struct {
	id       string
	audience string
	// confidential: client credentials with a service account; otherwise
	// a public client with the browser flow.
	confidential bool
	// passwordGrant: the resource-owner password grant is allowed.
	passwordGrant bool
	// redirectURIs and webOrigins of a public client: its UI's address.
	redirectURIs, webOrigins []string
}

// validatorClients are the clients a validator gets, the ledger API client
// first, and what they are once made but for its service-account user.
func validatorClients(validator string, uis UIs) ([]clientSpec, domain.ProvisionedAuth, error) {
	if strings.TrimSpace(validator) == "" {
		err := domain.Invalid("name", "a validator name is required to create its clients")
		return nil, domain.ProvisionedAuth{}, err
	}
	wallet, ans := uis.URLs(validator)
	a := domain.ProvisionedAuth{
		Audience:          Audience(validator),
		LedgerAPIClient:   LedgerAPIClientID(validator),
		WalletClient:      WalletClientID(validator),
		NameServiceClient: NameServiceClientID(validator),
		WalletURL:         wallet,
		NameServiceURL:    ans,
	}
	return []clientSpec{
		{id: a.LedgerAPIClient, audience: a.Audience, confidential: true},
		{id: a.WalletClient, audience: a.Audience, passwordGrant: true, redirectURIs: redirectURIs(wallet), webOrigins: webOrigins(wallet)},
		{id: a.NameServiceClient, audience: a.Audience, redirectURIs: redirectURIs(ans), webOrigins: webOrigins(ans)},
	}, a, nil
}

// RealmEndpoints are the OpenID Connect endpoints of realm under a
// Keycloak-shaped base URL (see KeycloakConfig.BaseURL).
func RealmEndpoints(baseURL, realm string) domain.AuthEndpoints {
	token := TokenURL(baseURL, realm)
	authority := strings.TrimSuffix(token, "/protocol/openid-connect/token")
	return domain.AuthEndpoints{
		Authority: authority,
		JWKS:      authority + "/protocol/openid-connect/certs",
		Config:    authority + "/.well-known/openid-configuration",
		Token:     token,
	}
}

// clientSecret draws a client secret from crypto/rand (256 bits).
func clientSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate client secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// notOurs is the refusal of a client that exists without the claim of the
// validator's create: someone else made it.
func notOurs(clientID string) error {
	return domain.Conflict("identity provider client %q already exists and was not made for this validator", clientID)
}
