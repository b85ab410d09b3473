package app_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/config"
)

// TestManagerStopClosesSandbox: the embedded default's simulated network
// is served by the Manager: its listeners (the scan service's and a
// validator's ledger, app and admin API) answer while Run runs and are
// closed once Run has returned, before Close releases anything.
func TestManagerStopClosesSandbox(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	cfg := config.Default()
	cfg.DataDir, cfg.Namespace = t.TempDir(), fmt.Sprintf("sandbox-%d", time.Now().UnixNano()%1_000_000)
	cfg.ShutdownTimeout = 5 * time.Second
	a, _, cancel, done := runManager(t, cfg)
	if a.Sandbox == nil {
		t.Fatal("the embedded default has no sandbox network")
	}

	node, err := a.Sandbox.Target("v1")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, url := range []string{a.Sandbox.URL() + "/.well-known/jwks.json", node.LedgerURL + "/v2/version"} {
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatalf("GET %s while Run runs: %v", url, err)
		}
		resp.Body.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	for _, addr := range []string{a.Sandbox.URL(), node.LedgerURL, node.ValidatorAppURL, node.AdminAddress} {
		addr = strings.TrimPrefix(addr, "http://")
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s accepts connections after the Manager stopped", addr)
		}
	}
}
