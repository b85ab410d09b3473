package server

import (
	"regexp"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// RequestIDPattern is what a client's X-Request-Id must match to be kept:
// 1 to 128 letters, digits, '.', '_', ':' and '-' (a UUID, a W3C trace id,
// most gateways' ids). Anything else is replaced by a generated id, so that
// logs, the audit log and the answer never carry markup, separators or
// unbounded text a client chose.
var RequestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// requestIDs keeps a client's X-Request-Id when it matches RequestIDPattern
// and generates one otherwise; the id is echoed in the answer.
func requestIDs() echo.MiddlewareFunc {
	generate := middleware.RequestID()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		h := generate(next)
		return func(c echo.Context) error {
			r := c.Request()
			if ids := r.Header.Values(echo.HeaderXRequestID); len(ids) > 1 || len(ids) == 1 && !RequestIDPattern.MatchString(ids[0]) {
				r.Header.Del(echo.HeaderXRequestID)
			}
			return h(c)
		}
	}
}
