package sandbox_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
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
	"github.com/validator-manager/validator-manager/impl/topology"
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

// TestExternalPartiesSurviveRestart: an external party allocated before a
// restart is listed after it, its co-host still owes approval, and a
// multi-hash spent before the restart stays spent.
func TestExternalPartiesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	var tokens atomic.Int32
	n, c := open(t, dir, &tokens)
	ctx := t.Context()
	v1, err := c.For(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := c.For(ctx, "v2")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := v2.Ledger.GetV2PartiesParticipantIdWithResponse(ctx)
	syncs, _ := v1.Ledger.GetV2StateConnectedSynchronizersWithResponse(ctx, nil)
	sync := (*syncs.JSON200.ConnectedSynchronizers)[0].SynchronizerId
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(pub)

	onboard := func(hint string, cohosts []string) (ledgerapi.AllocateExternalPartyRequest, string) {
		t.Helper()
		g, err := v1.Ledger.PostV2PartiesExternalGenerateTopologyWithResponse(ctx, ledgerapi.GenerateExternalPartyTopologyRequest{
			Synchronizer: sync, PartyHint: hint, OtherConfirmingParticipantUids: &cohosts,
			PublicKey: ledgerapi.SigningPublicKey{Format: topology.KeyFormatSPKI, KeyData: base64.StdEncoding.EncodeToString(der), KeySpec: topology.SpecEd25519},
		})
		if err != nil || g.JSON200 == nil {
			t.Fatalf("generate: %v %s", err, g.Body)
		}
		mh, _ := base64.StdEncoding.DecodeString(g.JSON200.MultiHash)
		var txs []ledgerapi.SignedTransaction
		for _, tx := range g.JSON200.TopologyTransactions {
			txs = append(txs, ledgerapi.SignedTransaction{Transaction: tx})
		}
		return ledgerapi.AllocateExternalPartyRequest{Synchronizer: sync, OnboardingTransactions: txs, MultiHashSignatures: &[]ledgerapi.Signature{{
			Format: "SIGNATURE_FORMAT_CONCAT", Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, mh)),
			SignedBy: g.JSON200.PublicKeyFingerprint, SigningAlgorithmSpec: "SIGNING_ALGORITHM_SPEC_ED25519",
		}}}, g.JSON200.PartyId
	}
	good, party := onboard("shared", []string{pid.JSON200.ParticipantId})
	if r, err := v1.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, good); err != nil || r.StatusCode() != http.StatusOK || r.JSON200.PartyId != party {
		t.Fatalf("allocate: %v %s", err, r.Body)
	}
	spent, _ := onboard("lonely", []string{"participant-gone::1220" + strings.Repeat("0", 64)})
	if r, _ := v1.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, spent); r.StatusCode() != http.StatusNotFound {
		t.Fatalf("allocate with an unknown co-host: got %d %s, want 404", r.StatusCode(), r.Body)
	}
	n.Close()

	_, c2 := open(t, dir, &tokens)
	v1, _ = c2.For(ctx, "v1")
	if got := parties(t, c2, "v1"); !strings.Contains(strings.Join(got, ","), party) {
		t.Fatalf("after restart: got %v, want %s among them", got, party)
	}
	if got := parties(t, c2, "v2"); strings.Contains(strings.Join(got, ","), party) {
		t.Fatalf("the co-host lists %s before approving", party)
	}
	for name, req := range map[string]ledgerapi.AllocateExternalPartyRequest{"allocated": good, "failed after signing": spent} {
		r, _ := v1.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, req)
		if r.StatusCode() != http.StatusConflict || !strings.Contains(string(r.Body), "MULTI_HASH_ALREADY_USED") {
			t.Fatalf("%s, again after restart: got %d %s, want 409 MULTI_HASH_ALREADY_USED", name, r.StatusCode(), r.Body)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	var st struct {
		Hosting map[string]struct {
			Pending []string `json:"pending"`
		} `json:"hosting"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if p := st.Hosting[party].Pending; len(p) != 1 || p[0] != pid.JSON200.ParticipantId {
		t.Fatalf("co-hosts owing approval: got %v, want [%s]", p, pid.JSON200.ParticipantId)
	}
}
