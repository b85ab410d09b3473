package server

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/validator-manager/validator-manager/impl/auth"
)

const principalKey = "vm.principal"

// authenticate admits a request only with a verified bearer token.
func authenticate(v *auth.Verifier) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			header := c.Request().Header.Get("Authorization")
			scheme, token, ok := strings.Cut(header, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
				return fmt.Errorf("%w: no bearer token", auth.ErrUnauthenticated)
			}
			p, err := v.Verify(c.Request().Context(), strings.TrimSpace(token))
			if err != nil {
				return err
			}
			c.Set(principalKey, p)
			return next(c)
		}
	}
}
