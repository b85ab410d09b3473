package server

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// RequiredRoleKey is the extension by which each operation of both contracts
// names the role it needs when roles are on; the server refuses to start when
// an operation lacks it.
const RequiredRoleKey = "x-required-role"

// requiredRole reads an operation's x-required-role.
func requiredRole(op *openapi3.Operation) (auth.Role, error) {
	v, ok := op.Extensions[RequiredRoleKey].(string)
	if !ok {
		return auth.RoleNone, fmt.Errorf("operation %s has no %s", op.OperationID, RequiredRoleKey)
	}
	r, err := auth.ParseRole(v)
	if err != nil {
		return auth.RoleNone, fmt.Errorf("operation %s: %s: %w", op.OperationID, RequiredRoleKey, err)
	}
	return r, nil
}

// authorize refuses, in the release's 403, a caller whose token's role
// (auth.Principal.Role, resolved by the verifier) is below need. It runs
// after authenticate and the audit, so a refused mutation is audited too.
func authorize(operation string, need auth.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, _ := auth.PrincipalFrom(c.Request().Context())
			if p.Role < need {
				return &domain.Error{
					Code:    domain.CodeForbidden,
					Message: fmt.Sprintf("forbidden: operation %s needs role %s; the token carries %s", operation, need, p.Role),
				}
			}
			return next(c)
		}
	}
}
