package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/validator-manager/validator-manager/impl/server"
)

// TestPprof: the listener serves profiles on loopback and refuses any
// other address; its Runnable runs on every replica and closes the
// listener when it stops.
func TestPprof(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		if ln, err := server.ListenPprof(addr); err == nil {
			ln.Close()
			t.Errorf("%s: got a listener, want a refusal", addr)
		}
	}
	ln, err := server.ListenPprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := server.Pprof(ln)
	if r.NeedLeaderElection() {
		t.Error("the profiling listener waits for leadership, want it on every replica")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("got %d with %d bytes, want 200 with a profile", resp.StatusCode, len(body))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("got %v, want a clean stop", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener accepts connections after the stop")
	}
}
