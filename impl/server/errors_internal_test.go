package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestPlatformErrorBody: the 2.0 error body is byte for byte what
// encoding/json writes for platformError (as c.JSON did), escapes included.
func TestPlatformErrorBody(t *testing.T) {
	t.Parallel()
	render := renderPlatform(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, msg := range []string{
		`validator "no-such-validator" does not exist in namespace "validators"`,
		"",
		"a <b> & c",
		"tab\there, newline\n, NUL \x00",
		"caf\u00e9 \u2028 \u2029",
		"invalid \xff UTF-8",
		`back\slash`,
	} {
		for _, code := range []domain.Code{domain.CodeNotFound, domain.CodeConflict} {
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/api/v1/x", nil), rec)
			if err := render(c, &domain.Error{Code: code, Message: msg}); err != nil {
				t.Fatal(err)
			}
			var got platformError
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("%q: %v", msg, err)
			}
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(platformError{Timestamp: got.Timestamp, Status: status[code], Error: msg}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
				t.Errorf("%q: got %s, want %s", msg, rec.Body.Bytes(), want.Bytes())
			}
		}
	}
}
