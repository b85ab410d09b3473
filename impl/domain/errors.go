// Package domain holds what every layer of validator-manager shares: the
// error codes each adapter translates into and each release renders.
package domain

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies a failure; each release maps codes to its own status and body.
type Code int

const (
	CodeInternal Code = iota
	CodeInvalid
	CodeUnauthenticated
	CodeNotFound
	CodeConflict
	CodeUnavailable
	CodeNotImplemented
	CodeTooLarge
	CodeMethodNotAllowed
	// CodeForbidden: the caller is known but its role does not allow the
	// operation.
	CodeForbidden
)

// Error is a failure the caller can act on. Field names the offending input
// (a dotted JSON path or a parameter name) for CodeInvalid; it may be empty.
type Error struct {
	Code    Code
	Field   string
	Message string
	// Cause is the underlying failure, for the log only: it may name
	// addresses and internals that no response shows.
	Cause error
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// Is lets errors.Is match on the code alone: errors.Is(err, domain.ErrNotFound).
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Field == "" && t.Message == "" && t.Code == e.Code
}

// ErrStarting is the cause of an Unavailable that a starting process
// expects (a first sync that has not had its chance yet): health reports
// the component DOWN and logs it at INFO, not WARN.
var ErrStarting = errors.New("starting")

// Starting reports a dependency that is not ready yet because the process
// is starting; errors.Is(err, ErrStarting) and errors.Is(err,
// ErrUnavailable) both hold.
func Starting(format string, args ...any) *Error {
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf(format, args...), Cause: ErrStarting}
}

// ErrWrittenMeanwhile is the cause of the Conflict of a conditional write
// whose row was written since it was read: the caller reads it again and
// applies its change to what it finds.
var ErrWrittenMeanwhile = errors.New("written meanwhile")

// StartChance is how long a first sync or pass may take before its absence
// is a fault, not a start (controller-runtime's default CacheSyncTimeout).
const StartChance = 2 * time.Minute

// NotReady reports what has not happened since began (Unix nanoseconds; 0:
// not begun): Starting for StartChance, then Unavailable, saying how long.
func NotReady(began int64, what, since string) *Error {
	if began == 0 || time.Since(time.Unix(0, began)) < StartChance {
		return Starting("%s", what)
	}
	return Unavailable("%s (for %s since %s)", what, StartChance, since)
}

// Sentinels for errors.Is.
var (
	ErrInvalid     = &Error{Code: CodeInvalid}
	ErrNotFound    = &Error{Code: CodeNotFound}
	ErrConflict    = &Error{Code: CodeConflict}
	ErrUnavailable = &Error{Code: CodeUnavailable}
)

// Invalid reports a bad input value.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFound reports a missing resource.
func NotFound(format string, args ...any) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// Conflict reports a state that forbids the request.
func Conflict(format string, args ...any) *Error {
	return &Error{Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// Unavailable reports a dependency that is not ready.
func Unavailable(format string, args ...any) *Error {
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf(format, args...)}
}

// Internal reports a failure the caller cannot act on; the response says
// only "internal server error", cause goes to the log.
func Internal(cause error) *Error {
	return &Error{Code: CodeInternal, Message: cause.Error(), Cause: cause}
}

// NotImplemented reports an operation of the contract this build does not serve yet.
func NotImplemented(operation, missing string) *Error {
	return &Error{Code: CodeNotImplemented, Message: fmt.Sprintf("%s is not built yet in this server version: %s", operation, missing)}
}

// Invalids is a set of bad inputs reported together (release 1.11 lists every
// offending field in one 400 body).
type Invalids []*Error

func (v Invalids) Error() string {
	msgs := make([]error, len(v))
	for i, e := range v {
		msgs[i] = e
	}
	return errors.Join(msgs...).Error()
}

// Err is v as an error: nil when v is empty, as errors.Join answers none.
func (v Invalids) Err() error {
	if len(v) == 0 {
		return nil
	}
	return v
}

// UpstreamError is a failed call to a node the server proxies to. Like
// Error, it carries a message safe for the client and a cause for the log
// only (which may name addresses, upstream bodies or internals).
type UpstreamError struct {
	// Endpoint names the upstream operation, e.g. "ledger POST /v2/parties".
	Endpoint string
	// Status is the upstream's HTTP status, or 0 when the call did not complete.
	Status int
	// Rejected is true when the upstream refused the request as invalid
	// (a retry does not help).
	Rejected bool
	// Message says what failed, for the client.
	Message string
	Cause   error
}

func (e *UpstreamError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("upstream %s: %s: %v", e.Endpoint, e.Message, e.Cause)
	}
	return fmt.Sprintf("upstream %s: %s", e.Endpoint, e.Message)
}

func (e *UpstreamError) Unwrap() error { return e.Cause }
