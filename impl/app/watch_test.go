package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
)

// TestWatchStreamsEndAtShutdown: under the Manager, the watch streams of
// both releases outlive the request timeout, and at shutdown each gets
// `close` with the reason and ends, so that the HTTP server stops at once
// instead of waiting out its grace period for them.
func TestWatchStreamsEndAtShutdown(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	cfg := config.Default()
	cfg.DataDir, cfg.Namespace = t.TempDir(), fmt.Sprintf("watch-%d", time.Now().UnixNano()%1_000_000)
	cfg.RequestTimeout, cfg.ShutdownTimeout = time.Second, 20*time.Second
	a, ln, cancel, done := runManager(t, cfg)
	token, err := a.DevToken()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.WatchSynced():
	case <-time.After(60 * time.Second):
		t.Fatal("the watch streams did not start")
	}

	var streams []*bufio.Reader
	for _, path := range []string{"/api/watch/validators", "/api/v1/watch/validators"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: got %d, want 200", path, resp.StatusCode)
		}
		streams = append(streams, bufio.NewReader(resp.Body))
	}
	time.Sleep(1500 * time.Millisecond) // past server.requestTimeout
	stopped := time.Now()
	cancel()
	for _, r := range streams {
		rest, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("reading to the end: %v (read %q)", err, rest)
		}
		if !strings.HasSuffix(string(rest), "event: close\ndata: {\"reason\":\"shutdown\"}\n\n") {
			t.Fatalf("stream ended with %q, want the close event with reason shutdown (not cut by the request timeout)", rest)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(cfg.ShutdownTimeout):
		t.Fatal("Run did not return within the shutdown grace")
	}
	if took := time.Since(stopped); took > 10*time.Second {
		t.Fatalf("shutdown took %s with two open streams, want well within the %s grace", took, cfg.ShutdownTimeout)
	}
}

// runManager opens the embedded default of cfg on the package's API server
// and runs it under its Manager on a loopback listener until cancel; done
// delivers Run's result.
func runManager(t *testing.T, cfg config.Config) (*app.App, net.Listener, context.CancelFunc, <-chan error) {
	t.Helper()
	skip := true // other tests of the package run Managers too
	a, err := app.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), "test",
		app.WithControlPlane(apiServer), app.With(func(o *manager.Options) { o.Controller.SkipNameValidation = &skip }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, ln) }()
	return a, ln, cancel, done
}
