// Package etag makes the strong entity tags of the list operations of both
// releases and answers If-None-Match (RFC 9110, section 13.1.2), so that a
// poller's unchanged list costs a header compare. A tag is derived from a
// version the server knows without building the page (the database's list
// generation, the cache's resource versions) and the query; it must change
// whenever the page would.
package etag

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Of is the strong tag of parts (a version and the query that shaped the
// page), quoted as the ETag header carries it.
func Of(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:12]) + `"`
}

// Match tells whether header (If-None-Match: `*`, or a comma-separated list
// of tags, weak ones compared weakly as the RFC says for this header) names
// tag.
func Match(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == tag {
			return true
		}
	}
	return false
}
