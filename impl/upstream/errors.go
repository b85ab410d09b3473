package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
	"google.golang.org/grpc/codes"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/outbound"
)

// Canton error categories (JsCantonError.errorCategory) that say what
// JsCantonError.grpcCodeValue does where it is absent.
const (
	categoryInvalidIndependentOfSystemState = 8
	categoryResourceExists                  = 10
	categoryResourceMissing                 = 11
)

// cantonError is the part of JsCantonError the translation reads.
type cantonError struct {
	Code          string `json:"code"`
	Cause         string `json:"cause"`
	ErrorCategory int    `json:"errorCategory"`
	GrpcCodeValue int    `json:"grpcCodeValue"`
}

// spliceError is Splice's ErrorResponse.
type spliceError struct {
	Error string `json:"error"`
}

// Call describes one upstream call for error translation.
type Call struct {
	Upstream string // Ledger, Scan or ValidatorApp
	URL      string // the request URL; its query is dropped when shown
}

// Endpoint is the address shown to the client: scheme, host and path, never
// a query or credentials.
func (c Call) Endpoint() string {
	u, err := url.Parse(c.URL)
	if err != nil {
		return c.Upstream
	}
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}

func (c Call) label() string {
	switch c.Upstream {
	case Ledger:
		return "the ledger API"
	case Scan:
		return "the scan service"
	default:
		return "the validator app"
	}
}

// Failed translates a call that got no answer: a timeout, a refused
// connection or a token that could not be obtained.
func (c Call) Failed(err error) error {
	msg := c.label() + " could not be reached"
	var re *oauth2.RetrieveError
	var refused *outbound.RefusedError
	switch {
	case errors.As(err, &refused):
		// Before any timeout: the request (and its credentials) never left.
		msg = "not called: " + refused.Error()
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		msg = c.label() + " did not answer in time"
	case errors.As(err, &re) || strings.Contains(err.Error(), "oauth2:"):
		msg = "no token could be obtained for " + c.label()
	case errors.Is(err, context.Canceled):
		msg = "the request was cancelled while calling " + c.label()
	}
	return &domain.UpstreamError{Endpoint: c.Endpoint(), Message: msg, Cause: err}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// Answer translates a non-2xx answer: invalid input rejected → 422
// (UpstreamError.Rejected), unknown user or party → 404, already exists →
// 409, anything else → 502.
func (c Call) Answer(status int, body []byte) error {
	up := &domain.UpstreamError{Endpoint: c.Endpoint(), Status: status, Cause: fmt.Errorf("HTTP %d: %s", status, truncate(string(body), 2000))}
	var ce cantonError
	if c.Upstream == Ledger && json.Unmarshal(body, &ce) == nil && ce.Code != "" {
		detail := ce.Code
		if ce.Cause != "" {
			detail += ": " + truncate(ce.Cause, 300)
		}
		code := codes.Code(ce.GrpcCodeValue) // codes.OK where it is absent
		switch {
		case code == codes.InvalidArgument || code == codes.OK && ce.ErrorCategory == categoryInvalidIndependentOfSystemState:
			up.Rejected, up.Message = true, detail
			return up
		case code == codes.NotFound || code == codes.OK && ce.ErrorCategory == categoryResourceMissing:
			return &domain.Error{Code: domain.CodeNotFound, Message: detail, Cause: up}
		case code == codes.AlreadyExists || code == codes.OK && ce.ErrorCategory == categoryResourceExists:
			return &domain.Error{Code: domain.CodeConflict, Message: detail, Cause: up}
		}
		up.Message = c.label() + " failed: " + detail
		return up
	}
	detail := http.StatusText(status)
	var se spliceError
	if json.Unmarshal(body, &se) == nil && se.Error != "" {
		detail = truncate(se.Error, 300)
	}
	switch {
	case status == http.StatusNotFound:
		return &domain.Error{Code: domain.CodeNotFound, Message: detail, Cause: up}
	case status == http.StatusConflict:
		return &domain.Error{Code: domain.CodeConflict, Message: detail, Cause: up}
	case status == http.StatusBadRequest && c.Upstream != Ledger:
		up.Rejected, up.Message = true, detail
		return up
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		up.Message = c.label() + " refused the server's credentials"
		return up
	}
	up.Message = fmt.Sprintf("%s answered %d: %s", c.label(), status, detail)
	return up
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Check turns a generated client's result into an error: err (no answer),
// or a non-2xx status with its body.
func Check(up string, resp *http.Response, body []byte, err error, reqURL string) error {
	c := Call{Upstream: up, URL: reqURL}
	if resp != nil {
		c.URL = resp.Request.URL.String()
	}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			c.URL = ue.URL
		}
		return c.Failed(err)
	}
	if resp.StatusCode/100 != 2 {
		return c.Answer(resp.StatusCode, body)
	}
	return nil
}
