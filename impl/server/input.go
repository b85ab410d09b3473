package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// checkInput rejects, before validation and before any database sees them,
// inputs that no operation accepts: path and query values that are not
// valid UTF-8 or hold a NUL (PostgreSQL refuses both, SQLite stores them),
// and JSON bodies with such strings or with content after the document. It
// reads a buffered body whole, so an oversized one is a 413 whether or not
// it announced its length. It returns the query as parsed (what parsed,
// when not all did: url.URL.Query's values), for validation to read.
func checkInput(c echo.Context, streams bool) (url.Values, error) {
	var bad domain.Invalids
	names, values := c.ParamNames(), c.ParamValues()
	for i, n := range names {
		v, err := url.PathUnescape(values[i])
		if err != nil {
			v = values[i]
		}
		if msg := badText(v); msg != "" {
			bad = append(bad, domain.Invalid(n, "%s", msg))
		}
	}
	q, err := url.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		bad = append(bad, domain.Invalid("query", "is not a valid query string (percent-encoding or separators)"))
	}
	for k, vs := range q { // what parsed, when not all did
		if msg := badText(k); msg != "" {
			bad = append(bad, domain.Invalid("query", "a parameter name %s", msg))
			continue
		}
		for _, v := range vs {
			if msg := badText(v); msg != "" {
				bad = append(bad, domain.Invalid(k, "%s", msg))
				break
			}
		}
	}
	if len(bad) > 0 {
		return nil, bad
	}
	if !streams {
		if err := checkBody(c.Request()); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// badText says what is wrong with a text value, or "".
func badText(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL characters"
	}
	return ""
}

func checkBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	body := &decodedBody{Reader: bytes.NewReader(raw), req: r}
	r.Body = body
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if !utf8.Valid(raw) {
		return domain.Invalid("body", "must be valid UTF-8")
	}
	noteDecode(r)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil // not JSON: validation says so in the release's words
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return domain.Invalid("body", "has content after the JSON document")
	}
	body.value, body.json = doc, true
	var bad domain.Invalids
	walkStrings(doc, "", func(path, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			if path == "" {
				path = "body"
			}
			bad = append(bad, domain.Invalid(path, "must not contain NUL characters"))
		}
	})
	if len(bad) > 0 {
		return bad
	}
	return nil
}

// decodedBody is a buffered request body with the JSON document decoded
// from it, once: the null check and validation work on the value, and
// ValidatedValue hands it (defaults filled) to the generated binder
// (oapi-codegen's runtime.BindJSONValue), which then does not decode the
// body again. Reading it is a decode by whoever reads, and is counted.
type decodedBody struct {
	*bytes.Reader
	req   *http.Request
	value any
	json  bool // value holds the decoded document
	stale bool // validation filled defaults into value: re-encode before a read
	read  bool
}

func (b *decodedBody) Read(p []byte) (int, error) {
	if !b.read {
		b.read = true
		noteDecode(b.req)
		if b.stale {
			raw, err := json.Marshal(b.value)
			if err != nil {
				return 0, err
			}
			b.Reader.Reset(raw)
		}
	}
	return b.Reader.Read(p)
}

func (b *decodedBody) Close() error { return nil }

// ValidatedValue is the document that was validated, defaults included.
func (b *decodedBody) ValidatedValue() any { return b.value }

// decodedJSON is the JSON document of a buffered request body, if any.
func decodedJSON(r *http.Request) (*decodedBody, bool) {
	b, ok := r.Body.(*decodedBody)
	return b, ok && b.json
}

// decodeCount is the context key of a counter of the decodes of a request
// body: tests set it to prove that a body is decoded once.
type decodeCount struct{}

func noteDecode(r *http.Request) {
	if n, ok := r.Context().Value(decodeCount{}).(*atomic.Int32); ok {
		n.Add(1)
	}
}

// readBody reads a buffered body whole: 413 beyond the body limit (also for
// a chunked body), 408 when the client stops sending.
func readBody(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
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

// walkStrings calls f with every string (keys included) of a decoded JSON
// document and its dotted path.
func walkStrings(v any, path string, f func(path, s string)) {
	join := func(k string) string { return joinPath(path, k) }
	switch t := v.(type) {
	case string:
		f(path, t)
	case map[string]any:
		for k, e := range t {
			f(join(k), k)
			walkStrings(e, join(k), f)
		}
	case []any:
		for i, e := range t {
			walkStrings(e, join(strconv.Itoa(i)), f)
		}
	}
}

// limitHeaders answers 431 in the release's shape when the request line and
// headers exceed max bytes. net/http's own limit (http.Server.MaxHeaderBytes)
// is set well above it and answers in plain text; only requests beyond that
// see it.
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

// bodyDeadline bounds every read of a request body: a client that sends
// nothing for d (server.bodyReadTimeout) has its connection closed, whether
// or not a handler reads the body (net/http drains an unread body after the
// handler, under the deadline set here). A buffered body must also arrive
// whole within total (server.requestTimeout), a multipart upload within
// upload (upstream.timeout, the bound of the call it is streamed into), so
// that trickling a byte now and then holds no connection for long. Once the
// body is read the deadline is lifted: net/http then reads the connection
// in the background, and a deadline there would cancel the request's
// context. Requests without a body and WebSocket upgrades are left alone.
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
