package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestAppendPlatformError: the hand-written 2.0 error body is byte for byte
// what encoding/json writes for platformError (as c.JSON did), escapes
// included.
func TestAppendPlatformError(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 17, 4, 5, 123456789, time.FixedZone("", 3600))
	for _, msg := range []string{
		`validator "no-such-validator" does not exist in namespace "validators"`,
		"",
		"a <b> & c",
		"tab\there, newline\n, NUL \x00",
		"caf\u00e9 \u2028 \u2029",
		"invalid \xff UTF-8",
		`back\slash`,
	} {
		for _, status := range []int{http.StatusBadRequest, http.StatusNotFound} {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(platformError{Timestamp: at.Format(time.RFC3339Nano), Status: status, Error: msg}); err != nil {
				t.Fatal(err)
			}
			if got := appendPlatformError(nil, at, status, msg); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%q: got %s, want %s", msg, got, want.Bytes())
			}
		}
	}
}
