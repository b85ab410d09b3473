package platform_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/atomicfile"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// fullDisk writes as the sandbox does until failing is set: then every
// write fails as on a full or read-only disk (the tests run as root, whom
// file modes do not stop).
func fullDisk(failing *atomic.Bool) sandbox.WriteFile {
	return func(name string, data []byte, perm os.FileMode) error {
		if failing.Load() {
			return errors.New("no space left on device")
		}
		return atomicfile.Write(name, data, perm)
	}
}

// TestSandboxWriteIsDurable: while the sandbox state cannot be written, a
// party allocation is not acknowledged (an error naming the sandbox state)
// and leaves nothing behind, and /actuator/health is DOWN naming the
// sandbox; once it can be written again health is UP and the earlier state
// is intact, on disk too.
func TestSandboxWriteIsDurable(t *testing.T) {
	var failing atomic.Bool
	var dataDir string
	s := apitest.Start(t, apitest.Options{
		Config: func(c *config.Config) { dataDir = c.DataDir },
		App:    []app.Option{app.With(func(o *sandbox.Options) { o.WriteFile = fullDisk(&failing) })},
	})
	createValidator(t, s)
	ctx := t.Context()
	allocate := func(hint string) *platformapi.AllocatePartyResponse {
		r, err := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: hint})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	health := func() (int, map[string]any) {
		r, err := s.Public.GetHealthWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var h map[string]any
		_ = json.Unmarshal(r.Body, &h)
		return r.StatusCode(), h
	}
	expect(t, "allocate before", allocate("before").StatusCode(), nil, http.StatusOK)
	if st, h := health(); st != http.StatusOK || h["components"].(map[string]any)["sandbox"].(map[string]any)["status"] != "UP" ||
		h["components"].(map[string]any)["identityProvider"].(map[string]any)["status"] != "UP" {
		t.Fatalf("health before: %d %v", st, h)
	}

	failing.Store(true)
	r := allocate("lost")
	// The sandbox stands in for the ledger, whose 503 release 2.0 answers
	// as a failed upstream: 502 {endpoint, error}.
	if r.StatusCode() != http.StatusBadGateway || !strings.Contains(string(r.Body), "sandbox state") || !strings.Contains(string(r.Body), "the change was not made") {
		t.Fatalf("allocate while the disk is full: got %d %s, want a failure naming the sandbox state", r.StatusCode(), r.Body)
	}
	// An UP report is answered for a while after its check (the probe
	// before this one checks again behind it): DOWN within a few probes.
	if st, h := healthUntil(t, health, http.StatusServiceUnavailable); st != http.StatusServiceUnavailable || h["components"].(map[string]any)["sandbox"].(map[string]any)["status"] != "DOWN" {
		t.Fatalf("health while the disk is full: %d %v, want 503 with the sandbox DOWN", st, h)
	}

	failing.Store(false)
	if st, h := health(); st != http.StatusOK {
		t.Fatalf("health after: %d %v, want UP again", st, h)
	}
	l, err := s.Platform.ListPartiesWithResponse(ctx, validator, nil)
	if err != nil || l.StatusCode() != http.StatusOK {
		t.Fatalf("list parties: %v %d", err, l.StatusCode())
	}
	if body := string(l.Body); !strings.Contains(body, `"before::`) || strings.Contains(body, `"lost::`) {
		t.Fatalf("parties after the failed save: %s, want before and not lost", body)
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "sandbox", "state.json"))
	if err != nil || !strings.Contains(string(raw), "before::") || strings.Contains(string(raw), "lost::") {
		t.Fatalf("state on disk: %v; want before and not lost", err)
	}
}

// healthUntil probes until the status is want (at most 10 s): a probe
// answers the last check's UP report for a while (healthMaxAge) and checks
// again behind it.
func healthUntil(t *testing.T, probe func() (int, map[string]any), want int) (int, map[string]any) {
	t.Helper()
	st, h := probe()
	for deadline := time.Now().Add(10 * time.Second); st != want && time.Now().Before(deadline); st, h = probe() {
		time.Sleep(100 * time.Millisecond)
	}
	return st, h
}

// TestDatabaseHealthFollowsWritability: /actuator/health reports db DOWN
// while the SQLite database cannot be written (within a probe or two: an
// UP report is answered until the check behind it) and UP again at the
// next probe when it can.
// The pool's one connection is made read-only from the inside (PRAGMA
// query_only), which SQLite refuses writes with as it does for a read-only
// file; the tests run as root, whom a file's mode does not stop.
func TestDatabaseHealthFollowsWritability(t *testing.T) {
	s := apitest.Start(t, apitest.Options{Config: func(c *config.Config) {
		c.DatabaseMaxOpenConns, c.DatabaseMaxIdleConns = 1, 1
	}})
	ctx := t.Context()
	db := func() (int, any) {
		r, err := s.Public.GetHealthWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var h map[string]any
		_ = json.Unmarshal(r.Body, &h)
		return r.StatusCode(), h["components"].(map[string]any)["db"].(map[string]any)["status"]
	}
	if st, c := db(); st != http.StatusOK || c != "UP" {
		t.Fatalf("writable: got %d, db %v; want 200, UP", st, c)
	}
	if err := s.App.Store.Exec(ctx, "PRAGMA query_only = ON"); err != nil {
		t.Fatal(err)
	}
	st, c := db()
	for deadline := time.Now().Add(10 * time.Second); st == http.StatusOK && time.Now().Before(deadline); st, c = db() {
		time.Sleep(100 * time.Millisecond) // the UP report is answered until the check behind it
	}
	if st != http.StatusServiceUnavailable || c != "DOWN" {
		t.Errorf("read-only: got %d, db %v; want 503, DOWN", st, c)
	}
	if err := s.App.Store.Exec(ctx, "PRAGMA query_only = OFF"); err != nil {
		t.Fatal(err)
	}
	if st, c := db(); st != http.StatusOK || c != "UP" {
		t.Fatalf("writable again: got %d, db %v; want 200, UP", st, c)
	}
}
