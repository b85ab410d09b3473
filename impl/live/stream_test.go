package live_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/live"
)

func serve(t *testing.T, h *live.Hub) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := (live.Stream{Hub: h, Heartbeat: 100 * time.Millisecond}).Serve(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func open(t *testing.T, url string, header map[string]string) *bufio.Reader {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %s, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return bufio.NewReader(resp.Body)
}

func next(t *testing.T, r *bufio.Reader, skipHeartbeats bool) apitest.Event {
	t.Helper()
	for {
		e, err := apitest.ReadEvent(r)
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if skipHeartbeats && e.Comment == "heartbeat" {
			continue
		}
		return e
	}
}

func TestStream(t *testing.T) {
	h := synced(change("a", 6))
	srv := serve(t, h)
	r := open(t, srv.URL, nil)
	if e := next(t, r, true); e.Retry != "2000" {
		t.Fatalf("first: got %+v, want retry 2000", e)
	}
	for _, w := range []apitest.Event{
		{ID: "4", Name: "validator", Data: `{"name":"c"}`},
		{ID: "5", Name: "validator", Data: `{"name":"b"}`},
		{ID: "6", Name: "validator", Data: `{"name":"a"}`},
		{Name: "synced", Data: `{"resourceVersion":"6"}`},
	} {
		if e := next(t, r, true); e != w {
			t.Fatalf("catch-up: got %+v, want %+v", e, w)
		}
	}
	h.Publish(gone("b", 7))
	if e := next(t, r, true); e != (apitest.Event{ID: "7", Name: "deleted", Data: `{"name":"b"}`}) {
		t.Fatalf("live: got %+v, want b deleted at 7", e)
	}
	if e := next(t, r, false); e.Comment != "heartbeat" {
		t.Fatalf("idle: got %+v, want a heartbeat", e)
	}

	// A reconnection resumes after its last event; the header wins over since.
	r2 := open(t, srv.URL+"?since=1", map[string]string{"Last-Event-ID": "6"})
	next(t, r2, true) // retry
	if e := next(t, r2, true); e != (apitest.Event{ID: "7", Name: "deleted", Data: `{"name":"b"}`}) {
		t.Fatalf("resumed: got %+v, want only b deleted at 7", e)
	}
	if e := next(t, r2, true); e.Name != "synced" {
		t.Fatalf("resumed: got %+v, want synced", e)
	}

	// Shutdown: what was published is sent, then close, then the end.
	h.Publish(change("c", 8))
	h.Close()
	for _, r := range []*bufio.Reader{r, r2} {
		if e := next(t, r, true); e.ID != "8" {
			t.Fatalf("at shutdown: got %+v, want c at 8", e)
		}
		if e := next(t, r, true); e != (apitest.Event{Name: "close", Data: `{"reason":"shutdown"}`}) {
			t.Fatalf("at shutdown: got %+v, want close", e)
		}
		if _, err := apitest.ReadEvent(r); !errors.Is(err, io.EOF) {
			t.Fatalf("after close: got %v, want the end of the stream", err)
		}
	}
}

func TestStreamFilterAndBadSince(t *testing.T) {
	h := synced()
	srv := serve(t, h)
	r := open(t, srv.URL+"?name=b", nil)
	next(t, r, true)
	if e := next(t, r, true); e.ID != "5" {
		t.Fatalf("filtered: got %+v, want b at 5", e)
	}
	if e := next(t, r, true); e.Name != "synced" {
		t.Fatalf("filtered: got %+v, want synced", e)
	}
	h.Publish(change("a", 6))
	h.Publish(change("b", 7))
	if e := next(t, r, true); e.ID != "7" {
		t.Fatalf("filtered live: got %+v, want b at 7 (a is filtered out)", e)
	}
	resp, err := http.Get(srv.URL + "?since=x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable { // the test server renders every error so
		t.Fatalf("since=x: got %d, want the error returned", resp.StatusCode)
	}
}

// A client that stops reading is cut once its buffer is full, with close
// "slow" when the connection still takes it, and the hub forgets it.
func TestSlowClientIsCut(t *testing.T) {
	h := live.New(live.Options{Buffer: 4})
	h.Ready()
	srv := serve(t, h)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Never read; publish large changes until the socket buffers fill
	// and the stream's writes block, then its buffer.
	big := strings.Repeat("x", 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	for v := uint64(1); h.Watchers() > 0; v++ {
		if time.Now().After(deadline) {
			t.Fatal("a client that reads nothing was not cut within 20 s")
		}
		h.Publish(live.Change{Name: "a", Version: v, Data: []byte(`"` + big + `"`)})
		time.Sleep(time.Millisecond)
	}
}

// TestStreamEndsWhenTheTokenExpires: a stream opened with a token that
// expires ends then, `expired` and `close` its last events, and what is
// published after the expiry is not sent.
func TestStreamEndsWhenTheTokenExpires(t *testing.T) {
	h := synced()
	expires := time.Now().Add(400 * time.Millisecond).Truncate(time.Second).Add(time.Second)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{Subject: "operator", Expires: expires}))
		if err := (live.Stream{Hub: h, Heartbeat: time.Hour}).Serve(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	r := open(t, srv.URL, nil)
	for e := next(t, r, true); e.Name != "synced"; e = next(t, r, true) {
	}
	time.Sleep(time.Until(expires) + 100*time.Millisecond)
	h.Publish(change("late", 9))
	want := []apitest.Event{
		{Name: "expired", Data: `{"expiredAt":"` + expires.UTC().Format(time.RFC3339) + `"}`},
		{Name: "close", Data: `{"reason":"expired"}`},
	}
	for _, w := range want {
		if got := next(t, r, true); got != w {
			t.Fatalf("got %+v, want %+v", got, w)
		}
	}
	if e, err := apitest.ReadEvent(r); !errors.Is(err, io.EOF) {
		t.Fatalf("after close: got %+v, %v; want the end of the stream", e, err)
	}
}

// counted counts the bytes a handler writes.
type counted struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c counted) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (c counted) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// TestClientThatStopsReadingIsCut: a client that reads nothing is cut by the
// write deadline once its receive window and the connection's send buffer
// are full, even while the hub would still hold its events (its buffer is
// large here, so the hub's own cut never comes); and the server hands the
// kernel at most the send buffer's worth beyond what the client's window
// took, instead of the megabytes the kernel's autotuning allowed.
func TestClientThatStopsReadingIsCut(t *testing.T) {
	h := live.New(live.Options{Buffer: 1 << 16})
	h.Ready()
	var written atomic.Int64
	ended := make(chan struct{})
	var once sync.Once
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer once.Do(func() { close(ended) })
		_ = live.Stream{Hub: h, Heartbeat: time.Hour, WriteTimeout: time.Second}.Serve(counted{w, &written}, r)
	}))
	srv.Config.ConnContext = live.ConnContext
	srv.Start()
	t.Cleanup(srv.Close)

	// The client asks for the stream and never reads; its receive buffer is
	// small, so that what it takes in is known.
	const window = 8 << 10
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, window/2) // the kernel doubles it
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: stream.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	event := []byte(`"` + strings.Repeat("x", 4<<10) + `"`)
	start := time.Now()
	for v := uint64(1); ; v++ {
		select {
		case <-ended:
			t.Logf("cut after %s, %d bytes written", time.Since(start).Round(time.Millisecond), written.Load())
			// The client's window, the send buffer (the kernel doubles
			// SO_SNDBUF for its bookkeeping), the HTTP writer's buffer and
			// the event in flight.
			if limit := int64(window + 2*live.SendBuffer + 4<<10 + len(event) + 1<<10); written.Load() > limit {
				t.Errorf("%d bytes written before the cut, want at most %d", written.Load(), limit)
			}
			return
		default:
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("a client that reads nothing was not cut within 20 s (%d bytes written)", written.Load())
		}
		h.Publish(live.Change{Name: "a", Version: v, Data: event})
		time.Sleep(5 * time.Millisecond)
	}
}
