package domain

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode"
)

// KeyName refuses a name that becomes a key (a database key, a path
// segment, a ledger or identity-provider id) when it holds what makes two
// names look alike or a path escape: control, format (zero-width,
// bidirectional) and line or paragraph separator characters, path
// separators, or the whole name "." or "..". Nil when name is acceptable.
func KeyName(field, name string) *Error {
	if name == "." || name == ".." {
		return Invalid(field, "must not be %q", name)
	}
	for _, r := range name {
		switch {
		case r == '/' || r == '\\':
			return Invalid(field, "must not contain path separators ('/', '\\')")
		case unicode.IsControl(r):
			return Invalid(field, "must not contain control characters (U+%04X)", r)
		case unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			return Invalid(field, "must not contain invisible or bidirectional formatting characters (U+%04X)", r)
		}
	}
	return nil
}

// Port refuses anything but a decimal port number from 1 to 65535.
func Port(field, port string) *Error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0") != port {
		return Invalid(field, "must be a port number from 1 to 65535, got %q", port)
	}
	return nil
}

// Host refuses anything but a host name (letters, digits, '-', '_' and
// dots) or an IP address, without scheme, port, path or credentials.
func Host(field, host string) *Error {
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		return nil
	}
	ok := host != "" && len(host) <= 253
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		ok = ok && label != "" && len(label) <= 63 && strings.Trim(label, "-") == label &&
			strings.IndexFunc(label, func(r rune) bool {
				return !(r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '-' || r == '_')
			}) < 0
	}
	if !ok {
		return Invalid(field, "must be a host name or an IP address (no scheme, port or path), got %q", host)
	}
	return nil
}
