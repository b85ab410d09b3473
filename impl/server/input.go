package server

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// readBody reads a buffered body whole: 413 beyond the body limit (also for
// a chunked body), 408 when the client stops sending.
func readBody(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		// The body limit's 413 and deadlineReader's 408 as they are: the
		// 408 wraps os.ErrDeadlineExceeded, and says which bound was missed.
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, echo.NewHTTPError(http.StatusRequestTimeout, "the request body was not sent in time")
		}
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	return raw, nil
}

// limitHeaders answers 431 in the release's shape when the request line and
// headers exceed max bytes (net/http's own limit, set far above, answers in
// plain text).
func limitHeaders(max int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
			for k, vs := range r.Header {
				for _, v := range vs {
					n += len(k) + len(v) + 4
				}
			}
			if max > 0 && n > max {
				return echo.NewHTTPError(http.StatusRequestHeaderFieldsTooLarge,
					fmt.Sprintf("request line and headers are too large: %d bytes, at most %d", n, max))
			}
			return next(c)
		}
	}
}

// bodyDeadline bounds every read of a request body by d, and the whole body
// by total (a multipart upload by upload), so that trickling a byte now and
// then holds no connection for long, whether or not a handler reads the body
// (net/http drains an unread one after the handler, under this deadline).
// The deadline is lifted once the body is read: net/http then reads the
// connection, and a deadline would cancel the request's context.
func bodyDeadline(next http.Handler, d, total, upload time.Duration) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			next.ServeHTTP(w, r)
			return
		}
		body := &deadlineReader{ReadCloser: r.Body, rc: http.NewResponseController(w), d: d}
		whole, setting := total, "server.requestTimeout"
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
			whole, setting = upload, "upstream.timeout"
		}
		if whole > 0 {
			body.end = time.Now().Add(whole)
			body.whole = fmt.Sprintf("the request body did not arrive whole within %s (%s)", whole, setting)
		}
		if err := body.rc.SetReadDeadline(body.next()); err != nil {
			next.ServeHTTP(w, r) // not a network connection (a recorder)
			return
		}
		r.Body = body
		next.ServeHTTP(w, r)
		if !body.done {
			// Bound the drain of what the handler left unread, by the
			// whole body's deadline too.
			_ = body.rc.SetReadDeadline(body.next())
		}
	})
}

type deadlineReader struct {
	io.ReadCloser
	rc    *http.ResponseController
	d     time.Duration
	end   time.Time // zero: no bound on the whole body
	whole string    // what a cut at end says
	done  bool
}

// next is the deadline of the next read.
func (b *deadlineReader) next() time.Time {
	t := time.Now().Add(b.d)
	if !b.end.IsZero() && b.end.Before(t) {
		return b.end
	}
	return t
}

// Read answers a missed deadline as 408, saying which bound was missed.
func (b *deadlineReader) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	_ = b.rc.SetReadDeadline(b.next())
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.done = true
		switch {
		case errors.Is(err, io.EOF):
			_ = b.rc.SetReadDeadline(time.Time{})
		case errors.Is(err, os.ErrDeadlineExceeded):
			msg := fmt.Sprintf("the request body stalled for longer than %s (server.bodyReadTimeout)", b.d)
			if !b.end.IsZero() && !time.Now().Before(b.end) {
				msg = b.whole
			}
			return n, echo.NewHTTPError(http.StatusRequestTimeout, msg).SetInternal(err)
		}
	}
	return n, err
}
