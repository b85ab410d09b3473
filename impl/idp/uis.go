package idp

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// UIs say where browsers reach a validator's wallet and name-service UIs:
// their public clients get those addresses as redirect URIs and web
// origins, without which the identity provider refuses their logins.
type UIs struct {
	// Template is the UIs' base URL with {validator} and {ui} (wallet or
	// ans) in it: the server setting ui.publicUrl.
	Template string
	// Namespace: without a Template the UIs are at their in-cluster
	// services (what release 1.11 shows as applicationWallet).
	Namespace string
}

// The {ui} values of UIs.Template.
const (
	WalletUI      = "wallet"
	NameServiceUI = "ans"
)

// URLs are the base URLs of validator's wallet and name-service UIs, both
// empty when u says nothing.
func (u UIs) URLs(validator string) (wallet, nameService string) {
	switch {
	case u.Template != "":
		at := func(ui string) string {
			return strings.TrimRight(strings.NewReplacer("{validator}", validator, "{ui}", ui).Replace(u.Template), "/")
		}
		return at(WalletUI), at(NameServiceUI)
	case u.Namespace != "":
		return "http://" + domain.ServiceHost(validator, domain.ServiceWalletUI, u.Namespace),
			"http://" + domain.ServiceHost(validator, domain.ServiceANSUI, u.Namespace)
	}
	return "", ""
}

// CheckUITemplate tells whether t is a UIs.Template: an absolute http(s)
// URL without query or fragment that names {validator} (one address for
// every validator would let each one's UI log in with another's client).
func CheckUITemplate(t string) error {
	if t == "" {
		return nil
	}
	if !strings.Contains(t, "{validator}") {
		return fmt.Errorf("%q does not name {validator}", t)
	}
	u, err := url.Parse(strings.NewReplacer("{validator}", "v", "{ui}", WalletUI).Replace(t))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an absolute http(s) URL without query, fragment or user", t)
	}
	return nil
}

// redirectURIs are the redirect URIs of a UI at base: any path under it,
// in Keycloak's wildcard form (a trailing *).
func redirectURIs(base string) []string {
	if base == "" {
		return nil
	}
	return []string{base + "/*"}
}

// webOrigins is the origin of base (scheme, host and port), which the
// browser's token requests come from.
func webOrigins(base string) []string {
	u, err := url.Parse(base)
	if base == "" || err != nil {
		return nil
	}
	return []string{u.Scheme + "://" + u.Host}
}

// redirectAllowed tells whether redirect is one of registered, as Keycloak's
// RedirectUtils matches it: a registered URI ending in * (without a query)
// matches what before any query or fragment starts with its part before the
// *, or equals that without its trailing slash; any other matches exactly.
func redirectAllowed(registered []string, redirect string) bool {
	if u, err := url.Parse(redirect); redirect == "" || err != nil || !u.IsAbs() || strings.Contains(u.Path, "/..") {
		return false
	}
	bare := redirect
	if i := strings.IndexAny(bare, "?#"); i >= 0 {
		bare = bare[:i]
	}
	for _, r := range registered {
		prefix, wildcard := strings.CutSuffix(r, "*")
		switch {
		case wildcard && !strings.Contains(r, "?"):
			if strings.HasPrefix(bare, prefix) || (strings.HasSuffix(prefix, "/") && bare == strings.TrimSuffix(prefix, "/")) {
				return true
			}
		case r == redirect:
			return true
		}
	}
	return false
}
