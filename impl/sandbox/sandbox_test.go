package sandbox_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/sandbox"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// records knows the validators named.
type records []string

func (r records) GetValidator(_ context.Context, name string) (domain.Validator, error) {
	for _, n := range r {
		if n == name {
			return domain.Validator{Name: name}, nil
		}
	}
	return domain.Validator{}, domain.NotFound("validator %q not found", name)
}

func open(t *testing.T, dir string, tokens *atomic.Int32) (*sandbox.Network, *upstream.Clients) {
	t.Helper()
	hook, err := sandbox.ContractHook(func(p string) { t.Error(p) })
	if err != nil {
		t.Fatal(err)
	}
	n, err := sandbox.Open(dir, sandbox.Options{Hook: hook, Fault: func(_ string, r *http.Request) int {
		if r.URL.Path == "/oauth2/token" {
			tokens.Add(1)
		}
		return 0
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n, upstream.New(upstream.Options{Resolver: n.Resolver(records{"v1", "v2"}), Timeout: 5 * time.Second})
}

func parties(t *testing.T, c *upstream.Clients, validator string) []string {
	t.Helper()
	node, err := c.For(t.Context(), validator)
	if err != nil {
		t.Fatal(err)
	}
	r, err := node.Ledger.GetV2PartiesWithResponse(t.Context(), &ledgerapi.GetV2PartiesParams{})
	if err != nil || r.JSON200 == nil {
		t.Fatalf("list parties: %v %s", err, r.Body)
	}
	var out []string
	for _, p := range r.JSON200.PartyDetails {
		out = append(out, p.Party)
	}
	return out
}

// TestStateSurvivesRestart: parties allocated before a restart are there
// after it, on the same participant (same fingerprint), and the state file
// is readable by its owner only.
func TestStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	var tokens atomic.Int32
	n, c := open(t, dir, &tokens)
	node, err := c.For(t.Context(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	hint := "alice"
	r, err := node.Ledger.PostV2PartiesWithResponse(t.Context(), ledgerapi.AllocatePartyRequest{PartyIdHint: &hint})
	if err != nil || r.JSON200 == nil {
		t.Fatalf("allocate: %v %s", err, r.Body)
	}
	alice := r.JSON200.PartyDetails.Party
	before := parties(t, c, "v1")
	if got := parties(t, c, "v2"); len(got) != 1 || strings.HasPrefix(got[0], "alice::") {
		t.Fatalf("v2's parties: got %v, want only its operator party", got)
	}
	if tokens.Load() != 1 {
		t.Fatalf("token requests: got %d over several calls, want 1 (cached)", tokens.Load())
	}
	n.Close()

	_, c2 := open(t, dir, &tokens)
	after := parties(t, c2, "v1")
	if strings.Join(after, ",") != strings.Join(before, ",") || !strings.Contains(strings.Join(after, ","), alice) {
		t.Fatalf("after restart: got %v, want %v", after, before)
	}
	fi, err := os.Stat(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode: got %v, want 0600", fi.Mode().Perm())
	}
}

// TestUnknownValidator: the resolver says 404 for a validator without a record.
func TestUnknownValidator(t *testing.T) {
	var tokens atomic.Int32
	_, c := open(t, t.TempDir(), &tokens)
	if _, err := c.For(t.Context(), "nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("got %v, want not found", err)
	}
}
