package server

import (
	"context"
	"log/slog"
	"regexp"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// RequestIDPattern is what a client's X-Request-Id must match to be kept, so
// that logs, the audit log and the answer never carry markup or unbounded
// text a client chose.
var RequestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// requestIDs keeps a client's X-Request-Id when it matches RequestIDPattern
// and generates one otherwise; the id is echoed in the answer.
func requestIDs() echo.MiddlewareFunc {
	generate := middleware.RequestIDWithConfig(middleware.RequestIDConfig{
		RequestIDHandler: func(c echo.Context, id string) {
			c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), requestIDKey{}, id)))
		},
	})
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

type requestIDKey struct{}

// LogRequestIDs wraps a log handler so that every line logged with a
// request's context (by the server, a handler or anything they call)
// carries the request's id, unless it names one itself.
func LogRequestIDs(h slog.Handler) slog.Handler { return requestIDHandler{h} }

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		named := false
		r.Attrs(func(a slog.Attr) bool {
			named = a.Key == "request_id"
			return !named
		})
		if !named {
			r.AddAttrs(slog.String("request_id", id))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
