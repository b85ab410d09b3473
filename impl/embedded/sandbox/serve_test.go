package sandbox_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// serve runs n's Start until the test ends, as the Manager does.
func serve(t testing.TB, n *sandbox.Network) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sandbox: %v", err)
		}
		n.Close()
	})
}

// TestStartServesUntilStopped: Start serves the listeners open before it
// and those of nodes started after it; once its context ends it returns
// with every listener closed, and no node starts any more.
func TestStartServesUntilStopped(t *testing.T) {
	n, err := sandbox.Open(t.TempDir(), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Start(ctx) }()
	v1, err := n.Target("v1")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, url := range []string{n.URL() + "/.well-known/jwks.json", v1.LedgerURL + "/livez"} {
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatalf("GET %s while served: %v", url, err)
		}
		resp.Body.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return once its context ended")
	}
	for _, addr := range []string{n.URL(), v1.LedgerURL, v1.ValidatorAppURL, v1.AdminAddress} {
		addr = strings.TrimPrefix(addr, "http://")
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s accepts connections after Start returned", addr)
		}
	}
	if _, err := n.Target("v2"); err == nil {
		t.Error("a node started after the network stopped")
	}
}
