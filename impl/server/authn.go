package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/validator-manager/validator-manager/impl/auth"
)

// authenticate admits a request only with a verified bearer token, and puts
// the caller into the request's context (auth.PrincipalFrom) for the
// handlers, the audit and the logs.
func authenticate(v *auth.Verifier) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token := bearerToken(c.Request())
			if token == "" {
				return fmt.Errorf("%w: no bearer token", auth.ErrUnauthenticated)
			}
			p, err := v.Verify(c.Request().Context(), token)
			if err != nil {
				return err
			}
			r := c.Request()
			c.SetRequest(r.WithContext(auth.WithPrincipal(r.Context(), p)))
			return next(c)
		}
	}
}

// bearerToken reads the token from Authorization, or, on a WebSocket
// handshake (browsers cannot set headers there), from the subprotocol list
// "bearer, <token>".
func bearerToken(r *http.Request) string {
	if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return ""
	}
	protocols := strings.Split(r.Header.Get("Sec-WebSocket-Protocol"), ",")
	for i := 0; i+1 < len(protocols); i++ {
		if strings.EqualFold(strings.TrimSpace(protocols[i]), "bearer") {
			return strings.TrimSpace(protocols[i+1])
		}
	}
	return ""
}
