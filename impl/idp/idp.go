// Package idp is the identity provider in which wallet users are created:
// Keycloak over its admin REST API in production, a local provider persisted
// in the data directory for the embedded default.
package idp

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strings"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// ClaimAttribute is the user attribute that names the create a wallet user
// belongs to (the validator row's claim): a create interrupted by a crash is
// undone by deleting the user that carries its claim, never a user of the
// same name that someone else made.
const ClaimAttribute = "validator-manager.io/claim"

// walletUsername is the wallet user of a validator. Keycloak stores
// usernames in lower case, so both providers do.
func walletUsername(validator string) (string, error) {
	if strings.TrimSpace(validator) == "" {
		return "", domain.Invalid("name", "a validator name is required to create its wallet user")
	}
	return strings.ToLower(validator) + "_walletuser", nil
}

// Alphabet of temporary passwords: characters that cannot be misread (no
// I, O, l, 0, 1) since a person types the password once, and symbols that
// need no quoting in a shell, JSON or a form.
const (
	upperChars  = "ABCDEFGHJKLMNPQRSTUVWXYZ"
	lowerChars  = "abcdefghijkmnopqrstuvwxyz"
	digitChars  = "23456789"
	symbolChars = "-_.+=@%^"
	allChars    = upperChars + lowerChars + digitChars + symbolChars

	passwordLength = 24
	// perClass characters of each class are guaranteed, which satisfies
	// Keycloak policies such as upperCase(2) lowerCase(2) digits(2) specialChars(2).
	perClass = 2
)

// temporaryPassword draws a random password from crypto/rand (about 140 bits).
func temporaryPassword() (string, error) {
	out := make([]byte, 0, passwordLength)
	for _, class := range []string{upperChars, lowerChars, digitChars, symbolChars} {
		for range perClass {
			c, err := pick(class)
			if err != nil {
				return "", err
			}
			out = append(out, c)
		}
	}
	for len(out) < passwordLength {
		c, err := pick(allChars)
		if err != nil {
			return "", err
		}
		out = append(out, c)
	}
	// Fisher-Yates, so the guaranteed characters sit anywhere.
	for i := len(out) - 1; i > 0; i-- {
		j, err := randInt(i + 1)
		if err != nil {
			return "", err
		}
		out[i], out[j] = out[j], out[i]
	}
	return string(out), nil
}

func pick(class string) (byte, error) {
	i, err := randInt(len(class))
	if err != nil {
		return 0, err
	}
	return class[i], nil
}

func randInt(n int) (int, error) {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("generate temporary password: %w", err)
	}
	return int(v.Int64()), nil
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
