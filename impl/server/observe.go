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
	BeginAudit(ctx context.Context, e domain.AuditEntry) (int64, error)
	CompleteAudit(ctx context.Context, id int64, status int, validator string) error
}

// auditValidatorKey is the extension by which an operation that names its
// validator in the body rather than the path (1.11's createValidator and
// updateValidator) says which top-level body property holds the name.
const auditValidatorKey = "x-audit-validator"

// auditTimeout bounds each write of one audit entry; the completion outlives
// the request's own cancellation.
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
	op := m.Operation(operation)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			defer func() {
				if p := recover(); p != nil {
					op.Observe(http.StatusInternalServerError, time.Since(start))
					panic(p) // the recover middleware answers it
				}
			}()
			status := answered(c, next)
			op.Observe(status, time.Since(start))
			return nil
		}
	}
}

// audit records every call of a mutating operation after authentication,
// whatever its outcome, from the path alone (the body and query can carry
// secrets); bodyValidator, when not empty, is the one body property it reads.
// The entry is written before the operation is attempted, so that no mutation
// goes unaudited, and completed after it.
func audit(log *slog.Logger, a Auditor, operation, bodyValidator string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			e := auditEntry(c, operation)
			ctx := c.Request().Context()
			bctx, cancel := context.WithTimeout(ctx, auditTimeout)
			id, err := a.BeginAudit(bctx, e)
			cancel()
			if err != nil {
				log.LogAttrs(ctx, slog.LevelError, "audit entry not stored; operation not attempted", append(auditAttrs(e), slog.Any("error", err))...)
				return &domain.Error{
					Code:    domain.CodeUnavailable,
					Message: "the audit log (database) cannot be written; the operation was not attempted; retry later",
					Cause:   err,
				}
			}
			e.Status = http.StatusInternalServerError // unless answered
			defer func() {
				log.LogAttrs(ctx, slog.LevelInfo, "audit", auditAttrs(e)...)
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
				defer cancel()
				if err := a.CompleteAudit(cctx, id, e.Status, e.Validator); err != nil {
					log.LogAttrs(ctx, slog.LevelError, "audit entry not completed; it stays pending", append(auditAttrs(e), slog.Int64("audit_id", id), slog.Any("error", err))...)
				}
			}()
			e.Status = answered(c, next)
			if e.Validator == "" && bodyValidator != "" {
				e.Validator = bodyString(c, bodyValidator)
			}
			return nil
		}
	}
}

// auditEntry is what the audit keeps of a call, before its answer.
func auditEntry(c echo.Context, operation string) domain.AuditEntry {
	e := domain.AuditEntry{At: time.Now().UTC(), Operation: operation, RequestID: requestID(c)}
	if p, ok := auth.PrincipalFrom(c.Request().Context()); ok {
		e.Subject = p.Subject
		if p.Role != auth.RoleNone {
			e.Role = p.Role.String()
		}
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
	return e
}

// bodyString is the top-level string property name of the request's JSON
// body as decoded for validation; empty when there is none.
func bodyString(c echo.Context, name string) string {
	m, _ := c.Get(bodyKey).(map[string]any)
	s, _ := m[name].(string)
	return s
}

func auditAttrs(e domain.AuditEntry) []slog.Attr {
	return []slog.Attr{
		slog.String("request_id", e.RequestID),
		slog.String("subject", e.Subject),
		slog.String("role", e.Role),
		slog.String("operation", e.Operation),
		slog.String("validator", e.Validator),
		slog.Any("targets", e.Targets),
		slog.Int("status", e.Status),
	}
}
