package idp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// passwordTokenTimeout bounds the token request when ctx has no deadline.
const passwordTokenTimeout = 30 * time.Second

// TokenURL is the token endpoint of realm under a Keycloak base URL (see
// KeycloakConfig.BaseURL: include /auth for Keycloak before 17).
func TokenURL(baseURL, realm string) string {
	return strings.TrimRight(baseURL, "/") + "/realms/" + url.PathEscape(realm) + "/protocol/openid-connect/token"
}

// PasswordToken obtains a user's access token with the resource-owner
// password grant (step 1 of the recovery procedure) from the token endpoint
// tokenURL. Rejected credentials are a domain error of code CodeUnauthenticated.
func PasswordToken(ctx context.Context, tokenURL, clientID, username, password string) (string, error) {
	cfg := oauth2.Config{
		ClientID: clientID,
		// Form fields grant_type, client_id, username, password: a public client.
		Endpoint: oauth2.Endpoint{TokenURL: tokenURL, AuthStyle: oauth2.AuthStyleInParams},
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Timeout: passwordTokenTimeout})
	tok, err := cfg.PasswordCredentialsToken(ctx, username, password)
	if err == nil {
		return tok.AccessToken, nil
	}
	op := fmt.Sprintf("identity provider: password token for %q", username)
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		// Transport failures, or a 200 without access_token.
		return "", fmt.Errorf("%s: %s", op, Mask(err.Error(), password))
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	// Only the status and the RFC 6749 error fields; never the raw body.
	msg := fmt.Sprintf("%s: token endpoint answered %d %s", op, status, http.StatusText(status))
	if status < 500 && re.ErrorCode != "" {
		msg += ": " + Mask(strings.TrimSuffix(re.ErrorCode+": "+re.ErrorDescription, ": "), password)
	}
	if status == http.StatusUnauthorized || re.ErrorCode == "invalid_grant" {
		return "", &domain.Error{Code: domain.CodeUnauthenticated, Message: msg}
	}
	return "", errors.New(msg)
}
