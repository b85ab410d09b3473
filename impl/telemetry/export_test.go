package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// ObserveRequest records one answered API request.
func (m *Metrics) ObserveRequest(operation string, status int, d time.Duration) {
	m.Operation(operation).Observe(status, d)
}

// Outcome is the outcome of a call that ended with err (nil: ok): a
// deadline is a timeout, a domain.UpstreamError its status's outcome (or
// rejected when the upstream refused the input), anything else an error.
func Outcome(err error) string {
	var ue *domain.UpstreamError
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.As(err, &ue) && ue.Rejected:
		return OutcomeRejected
	case errors.As(err, &ue) && ue.Status > 0:
		return StatusOutcome(ue.Status)
	}
	return OutcomeError
}
