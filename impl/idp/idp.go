// Package idp is the identity provider in which wallet users are created:
// Keycloak over its admin REST API in production, a local provider persisted
// in the data directory for the embedded default.
package idp

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// ClaimAttribute is the user attribute that names the create a wallet user
// belongs to: a create retried after a crash adopts the user that carries its
// claim, never a user of the same name that someone else made.
const ClaimAttribute = "validator-manager.io/claim"

// walletUsername is the wallet user of a validator. Keycloak stores
// usernames in lower case, so both providers do.
func walletUsername(validator string) (string, error) {
	if strings.TrimSpace(validator) == "" {
		return "", domain.Invalid("name", "a validator name is required to create its wallet user")
	}
	return strings.ToLower(validator) + "_walletuser", nil
}

// Mask hides secret values in text that came from an upstream, in case the
// upstream echoes what it was sent: as sent in JSON, in a form or in a URL.
func Mask(text string, secrets ...string) string {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		quoted, _ := json.Marshal(s)
		for _, form := range []string{s, string(quoted[1 : len(quoted)-1]), url.QueryEscape(s), url.PathEscape(s)} {
			text = strings.ReplaceAll(text, form, "[redacted]")
		}
	}
	return text
}
