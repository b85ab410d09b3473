package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"

	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// status maps a domain code to its HTTP status; both releases share it.
var status = map[domain.Code]int{
	domain.CodeInternal:         http.StatusInternalServerError,
	domain.CodeInvalid:          http.StatusBadRequest,
	domain.CodeUnauthenticated:  http.StatusUnauthorized,
	domain.CodeNotFound:         http.StatusNotFound,
	domain.CodeConflict:         http.StatusConflict,
	domain.CodeUnavailable:      http.StatusServiceUnavailable,
	domain.CodeNotImplemented:   http.StatusNotImplemented,
	domain.CodeTooLarge:         http.StatusRequestEntityTooLarge,
	domain.CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	domain.CodeForbidden:        http.StatusForbidden,
}

// problem is an error reduced to what a release renders.
type problem struct {
	status   int
	message  string
	fields   map[string]string // 400: offending field -> message
	upstream *domain.UpstreamError
}

// classify reduces any error that reaches the boundary to a problem; anything
// unknown is a 500 whose detail goes to the log only.
func classify(log *slog.Logger, c echo.Context, err error) problem {
	// errors.AsType, not errors.As: the targets of As escape, four
	// allocations at every error answered.
	invalids, isInvalids := errors.AsType[domain.Invalids](err)
	if isInvalids {
		p := problem{status: http.StatusBadRequest, fields: map[string]string{}}
		for _, e := range invalids {
			p.addField(e.Field, e.Message)
		}
		return p
	}
	if derr, ok := errors.AsType[*domain.Error](err); ok {
		return classifyDomain(log, c, err, derr)
	}
	up, isUpstream := errors.AsType[*domain.UpstreamError](err)
	he, isHTTP := errors.AsType[*echo.HTTPError](err)
	switch {
	case isUpstream:
		st := http.StatusBadGateway
		if up.Rejected {
			st = http.StatusUnprocessableEntity
		}
		log.WarnContext(c.Request().Context(), "upstream call failed", "request_id", requestID(c), "endpoint", up.Endpoint, "status", up.Status, "error", up.Message, "cause", up.Cause)
		msg := up.Message
		if msg == "" {
			msg = "the upstream call failed"
		}
		return problem{status: st, message: msg, upstream: up}
	case errors.Is(err, auth.ErrUnauthenticated):
		return problem{status: http.StatusUnauthorized, message: err.Error()}
	case isHTTP:
		msg := http.StatusText(he.Code)
		switch he.Code {
		case http.StatusNotFound:
			msg = fmt.Sprintf("no route %s %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusMethodNotAllowed:
			msg = fmt.Sprintf("method %s is not allowed on %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusRequestEntityTooLarge:
			msg = "request body is too large"
		case http.StatusRequestHeaderFieldsTooLarge, http.StatusRequestTimeout:
			msg = fmt.Sprint(he.Message)
		case http.StatusBadRequest:
			// echo's binder: the body or a parameter could not be decoded.
			return problem{status: http.StatusBadRequest, fields: map[string]string{"body": "request body could not be read"}}
		}
		if he.Code >= 500 {
			log.ErrorContext(c.Request().Context(), "request failed", "request_id", requestID(c), "error", err)
		}
		return problem{status: he.Code, message: msg}
	default:
		log.ErrorContext(c.Request().Context(), "request failed", "request_id", requestID(c), "error", err)
		return problem{status: http.StatusInternalServerError, message: "internal server error"}
	}
}

// classifyDomain is classify of a domain.Error.
func classifyDomain(log *slog.Logger, c echo.Context, err error, derr *domain.Error) problem {
	p := problem{status: status[derr.Code], message: derr.Message}
	if derr.Code == domain.CodeInvalid {
		p.fields = map[string]string{}
		p.addField(derr.Field, derr.Message)
	}
	if p.status >= 500 && derr.Code != domain.CodeNotImplemented {
		log.ErrorContext(c.Request().Context(), "request failed", "request_id", requestID(c), "error", err, "cause", derr.Cause)
	}
	if derr.Code == domain.CodeInternal {
		p.message = "internal server error"
	}
	return p
}

func (p *problem) addField(field, msg string) {
	if field == "" {
		field = "body"
	}
	if prev, ok := p.fields[field]; ok {
		msg = prev + "; " + msg
	}
	p.fields[field] = msg
}

// summary is a 400's fields as one sentence, for shapes with one message.
func (p problem) summary() string {
	if len(p.fields) == 0 {
		return p.message
	}
	parts := make([]string, 0, len(p.fields))
	for f, m := range p.fields {
		parts = append(parts, f+": "+m)
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// renderManagement writes release 1.11's shape: every error body is a JSON
// object of string to string; 400 bodies are keyed by the offending field.
func renderManagement(log *slog.Logger) func(echo.Context, error) error {
	return func(c echo.Context, err error) error {
		p := classify(log, c, err)
		if p.fields != nil {
			return c.JSON(p.status, p.fields)
		}
		body := map[string]string{"error": p.message}
		if p.upstream != nil {
			body["endpoint"] = p.upstream.Endpoint
		}
		if p.status == http.StatusUnauthorized {
			body["error"] = "unauthorized: a valid bearer token is required"
			c.Response().Header().Set("WWW-Authenticate", "Bearer")
		}
		return c.JSON(p.status, body)
	}
}

// platformError is release 2.0's validation / not-found shape.
type platformError struct {
	Timestamp string `json:"timestamp"`
	Status    int    `json:"status"`
	Error     string `json:"error"`
}

// platformUpstreamError is release 2.0's shape for failed upstream calls.
type platformUpstreamError struct {
	Endpoint string `json:"endpoint"`
	Error    string `json:"error"`
}

// renderPlatform writes release 2.0's shapes; 401 has an empty body and a
// WWW-Authenticate challenge, 403 an empty body.
func renderPlatform(log *slog.Logger) func(echo.Context, error) error {
	return func(c echo.Context, err error) error {
		p := classify(log, c, err)
		switch {
		case p.status == http.StatusUnauthorized:
			c.Response().Header().Set("WWW-Authenticate", "Bearer")
			return c.NoContent(http.StatusUnauthorized)
		case p.status == http.StatusForbidden:
			return c.NoContent(http.StatusForbidden)
		case p.upstream != nil:
			return c.JSON(p.status, platformUpstreamError{Endpoint: p.upstream.Endpoint, Error: p.message})
		default:
			return c.JSON(p.status, platformError{Timestamp: time.Now().Format(time.RFC3339Nano), Status: p.status, Error: p.summary()})
		}
	}
}

var missingProperty = regexp.MustCompile(`^property "(.+)" is missing$`)

// requestInvalid turns kin-openapi's validation errors into domain.Invalids,
// one per offending parameter or body field.
func requestInvalid(err error) error {
	var out domain.Invalids
	var walk func(error, string)
	walk = func(err error, field string) {
		var branches openapi3.MultiError
		switch e := err.(type) {
		case openapi3.MultiError:
			for _, inner := range e {
				walk(inner, field)
			}
		case *openapi3filter.RequestError:
			if e.Parameter != nil {
				field = e.Parameter.Name
			}
			switch {
			case e.Err == nil:
				out = append(out, domain.Invalid(field, "%s", e.Reason))
			case errors.Is(e.Err, openapi3filter.ErrInvalidRequired):
				out = append(out, domain.Invalid(field, "is required"))
			default:
				walk(e.Err, field)
			}
		case *openapi3.SchemaError:
			if errors.As(e.Origin, &branches) && len(branches) > 0 {
				// allOf (every nullable section of an edit DTO): report the
				// fields inside, whose paths are already complete.
				walk(branches, field)
				return
			}
			path := e.JSONPointer()
			if field != "" {
				path = append([]string{field}, path...)
			}
			msg := e.Reason
			if e.Value == nil {
				msg = "must not be null"
			}
			if m := missingProperty.FindStringSubmatch(e.Reason); m != nil {
				if len(path) == 0 || path[len(path)-1] != m[1] {
					path = append(path, m[1])
				}
				msg = "is required"
			}
			out = append(out, domain.Invalid(strings.Join(path, "."), "%s", msg))
		default:
			msg := err.Error()
			if pe, ok := err.(*openapi3filter.ParseError); ok {
				msg = pe.Reason
			} else if inner := errors.Unwrap(err); inner != nil {
				walk(inner, field)
				return
			}
			if field == "" {
				out = append(out, domain.Invalid("body", "is not a valid document of the declared content type"))
				return
			}
			out = append(out, domain.Invalid(field, "%s", msg))
		}
	}
	walk(err, "")
	if len(out) == 0 {
		return domain.Invalid("", "invalid request")
	}
	return out
}
