package idp

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// A validator without custom authentication gets three clients in the
// platform's realm, named after it: the validator app's confidential
// ledger API client (client-credentials grant; its service-account user is
// the validator's ledger API user), and the public clients of its wallet UI
// (the recovery procedure's <name>-wallet-ui, which also allows the
// password grant) and of its name-service UI. Every one of them puts the
// validator's own audience into its tokens, so that one validator's token is
// not accepted by another's participant.
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
	// redirectURIs and webOrigins of a public client: its UI's address
	// (UIs), where the browser flow may return and whence its token
	// requests come.
	redirectURIs, webOrigins []string
}

// validatorClients are the clients a validator gets, the ledger API client
// first; its UIs are where uis says.
func validatorClients(validator string, uis UIs) ([]clientSpec, error) {
	if strings.TrimSpace(validator) == "" {
		return nil, domain.Invalid("name", "a validator name is required to create its clients")
	}
	aud := Audience(validator)
	wallet, ans := uis.URLs(validator)
	return []clientSpec{
		{id: LedgerAPIClientID(validator), audience: aud, confidential: true},
		{id: WalletClientID(validator), audience: aud, passwordGrant: true, redirectURIs: redirectURIs(wallet), webOrigins: webOrigins(wallet)},
		{id: NameServiceClientID(validator), audience: aud, redirectURIs: redirectURIs(ans), webOrigins: webOrigins(ans)},
	}, nil
}

// provisioned is what the clients of validator are, given the ledger API
// client's service-account user and where its UIs are.
func provisioned(validator, serviceAccount string, uis UIs) domain.ProvisionedAuth {
	wallet, ans := uis.URLs(validator)
	return domain.ProvisionedAuth{
		Audience:          Audience(validator),
		LedgerAPIClient:   LedgerAPIClientID(validator),
		LedgerAPIUser:     serviceAccount,
		WalletClient:      WalletClientID(validator),
		NameServiceClient: NameServiceClientID(validator),
		WalletURL:         wallet,
		NameServiceURL:    ans,
	}
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
