package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/telemetry"
)

// Auditor keeps the audit log (the database).
type Auditor interface {
	RecordAudit(ctx context.Context, e domain.AuditEntry) error
}

// auditTimeout bounds the write of one audit entry. It runs after the
// answer is decided and outlives the request's own cancellation.
const auditTimeout = 5 * time.Second

// answered runs next and renders its error at once, so that the status of
// the answer is known here; the error is then handled and not returned.
func answered(c echo.Context, next echo.HandlerFunc) int {
	if err := next(c); err != nil {
		c.Error(err)
	}
	return c.Response().Status
}

// instrument counts and times every request of an operation by its status.
func instrument(m *telemetry.Metrics, operation string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			defer func() {
				if p := recover(); p != nil {
					m.ObserveRequest(operation, http.StatusInternalServerError, time.Since(start))
					panic(p) // the recover middleware answers it
				}
			}()
			status := answered(c, next)
			m.ObserveRequest(operation, status, time.Since(start))
			return nil
		}
	}
}

// audit records every call of a mutating operation after authentication,
// whatever its outcome: who (the token's subject), what (operationId, the
// validator = path parameter name, the other path parameters), the status
// and the request id. It never reads the body or the query: they can carry
// secrets and key material. A failed write is logged; the answer stands
// (the operation has happened).
func audit(log *slog.Logger, a Auditor, operation string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			status := http.StatusInternalServerError // unless answered
			defer func() {
				e := domain.AuditEntry{At: time.Now().UTC(), Operation: operation, Status: status, RequestID: requestID(c)}
				if p, ok := auth.PrincipalFrom(c.Request().Context()); ok {
					e.Subject = p.Subject
				}
				for i, name := range c.ParamNames() {
					value := c.ParamValues()[i]
					if v, err := url.PathUnescape(value); err == nil {
						value = v
					}
					if name == "name" {
						e.Validator = value
						continue
					}
					if e.Targets == nil {
						e.Targets = map[string]string{}
					}
					e.Targets[name] = value
				}
				record(c.Request().Context(), log, a, e)
			}()
			status = answered(c, next)
			return nil
		}
	}
}

func record(ctx context.Context, log *slog.Logger, a Auditor, e domain.AuditEntry) {
	attrs := []slog.Attr{
		slog.String("request_id", e.RequestID),
		slog.String("subject", e.Subject),
		slog.String("operation", e.Operation),
		slog.String("validator", e.Validator),
		slog.Any("targets", e.Targets),
		slog.Int("status", e.Status),
	}
	log.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
	if a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if err := a.RecordAudit(ctx, e); err != nil {
		log.LogAttrs(ctx, slog.LevelError, "audit entry not stored", append(attrs, slog.Any("error", err))...)
	}
}
