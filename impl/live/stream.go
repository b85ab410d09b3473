package live

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// Defaults of a Stream.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	// DefaultRetry is the reconnection delay a stream asks browsers for.
	DefaultRetry = 2 * time.Second
	// SendBuffer is a stream connection's SO_SNDBUF: autotuned, it let
	// megabytes pile up for a client that stopped reading.
	SendBuffer = 64 << 10
)

// connKey carries a request's connection in its context (ConnContext).
type connKey struct{}

// ConnContext is the http.Server's ConnContext that lets a stream size its send buffer.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// bound sets the send buffer of the request's connection, when it is an
// HTTP/1 connection of its own (an HTTP/2 connection carries other streams).
func bound(r *http.Request) {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if r.ProtoMajor != 1 || c == nil {
		return
	}
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if t, ok := c.(*net.TCPConn); ok {
		_ = t.SetWriteBuffer(SendBuffer)
	}
}

// Stream serves a Hub's changes as Server-Sent Events; a stream never
// outlives the bearer token it was opened with.
type Stream struct {
	Hub *Hub
	// Heartbeat keeps proxies from closing an idle stream; WriteTimeout
	// cuts a client that does not read. Zero: the defaults.
	Heartbeat, WriteTimeout time.Duration
}

// Serve answers one watch request; errors before the stream starts are
// returned for the release to render.
func (s Stream) Serve(w http.ResponseWriter, r *http.Request) error {
	name := r.URL.Query().Get("name")
	var since *uint64
	for field, v := range map[string]string{"since": r.URL.Query().Get("since"), "Last-Event-ID": r.Header.Get("Last-Event-ID")} {
		if v == "" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return domain.Invalid(field, "must be a resource version (digits)")
		}
		if since == nil || field == "Last-Event-ID" {
			since = &n
		}
	}
	sub, cu, err := s.Hub.Subscribe(name, since)
	if err != nil {
		return err
	}
	defer sub.Close()

	heartbeat, timeout := cmp.Or(s.Heartbeat, DefaultHeartbeat), cmp.Or(s.WriteTimeout, DefaultWriteTimeout)
	bound(r)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)

	buf := make([]byte, 0, 512)
	send := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(timeout))
		_, err := w.Write(buf)
		buf = buf[:0]
		if err == nil {
			err = rc.Flush()
		}
		return err
	}
	buf = append(buf, "retry: "...)
	buf = strconv.AppendInt(buf, DefaultRetry.Milliseconds(), 10)
	buf = append(buf, "\n\n"...)
	if cu.Reset {
		buf = append(buf, "event: reset\ndata: {}\n\n"...)
	}
	for _, c := range cu.Changes {
		buf = appendEvent(buf, c)
		if len(buf) > 32<<10 {
			if err := send(); err != nil {
				return nil
			}
		}
	}
	buf = append(buf, `event: synced`+"\n"+`data: {"resourceVersion":"`...)
	buf = strconv.AppendUint(buf, cu.Latest, 10)
	buf = append(buf, "\"}\n\n"...)
	if err := send(); err != nil {
		return nil
	}

	var expiry <-chan time.Time
	if p, ok := auth.PrincipalFrom(r.Context()); ok && !p.Expires.IsZero() {
		t := time.NewTimer(time.Until(p.Expires))
		defer t.Stop()
		expiry = t.C
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case c := <-sub.Changes():
			buf = appendEvent(buf, c)
		case <-tick.C:
			buf = append(buf, ": heartbeat\n\n"...)
		case <-expiry:
			p, _ := auth.PrincipalFrom(r.Context())
			buf = append(buf, `event: expired`+"\n"+`data: {"expiredAt":"`...)
			buf = p.Expires.UTC().AppendFormat(buf, time.RFC3339)
			buf = append(buf, `"}`+"\n\n"+`event: close`+"\n"+`data: {"reason":"expired"}`+"\n\n"...)
			_ = send()
			return nil
		case <-sub.Done():
			reason := sub.Err()
			if errors.Is(reason, ErrShutdown) {
				// What was published before the end is still news.
				for len(sub.Changes()) > 0 {
					buf = appendEvent(buf, <-sub.Changes())
				}
			}
			buf = append(buf, `event: close`+"\n"+`data: {"reason":"`...)
			buf = append(buf, reason.Error()...)
			buf = append(buf, "\"}\n\n"...)
			_ = send()
			return nil
		case <-r.Context().Done():
			return nil
		}
		if err := send(); err != nil {
			return nil // the client is gone or does not read
		}
	}
}

func appendEvent(b []byte, c *Change) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, c.Version, 10)
	if c.Deleted {
		b = append(b, "\nevent: deleted\ndata: "...)
	} else {
		b = append(b, "\nevent: validator\ndata: "...)
	}
	b = append(b, c.JSON()...)
	return append(b, "\n\n"...)
}
