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
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
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
	hook, err := apitest.ContractHook(func(p string) { t.Error(p) })
	if err != nil {
		t.Fatal(err)
	}
	n, err := sandbox.Open(dir, sandbox.Options{Wrap: hook, Fault: func(_ string, r *http.Request) int {
		if r.URL.Path == "/oauth2/token" {
			tokens.Add(1)
		}
		return 0
	}})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, n)
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
	// The co-host step: the same signed transactions at the second hosting
	// participant. The multi-hash is spent per participant, so it succeeds
	// once there, signs the proposal and makes the hosting effective.
	v2, _ = c2.For(ctx, "v2")
	if r, err := v2.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, good); err != nil || r.StatusCode() != http.StatusOK || r.JSON200.PartyId != party {
		t.Fatalf("co-host allocate: %v %d %s", err, r.StatusCode(), r.Body)
	}
	if got := parties(t, c2, "v2"); !slices.Contains(got, party) {
		t.Fatalf("the co-host does not list %s after receiving its transactions: %v", party, got)
	}
	if r, _ := v2.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, good); r.StatusCode() != http.StatusConflict || !strings.Contains(string(r.Body), "MULTI_HASH_ALREADY_USED") {
		t.Fatalf("co-host allocate again: got %d %s, want 409 MULTI_HASH_ALREADY_USED", r.StatusCode(), r.Body)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	var eff struct {
		Hosting map[string]struct {
			Serial   uint32    `json:"serial"`
			Proposal *struct{} `json:"proposal"`
		} `json:"hosting"`
	}
	if err := json.Unmarshal(raw, &eff); err != nil {
		t.Fatal(err)
	}
	if h := eff.Hosting[party]; h.Serial != 1 || h.Proposal != nil {
		t.Fatalf("after the co-host step: serial %d, proposal %v: want the mapping effective at serial 1", h.Serial, h.Proposal)
	}
}

// TestProposalSignedByAllocatorOnly: before the co-host acts, the proposal
// bears the party's and the allocating participant's signatures only.
func TestProposalSignedByAllocatorOnly(t *testing.T) {
	dir := t.TempDir()
	var tokens atomic.Int32
	_, c := open(t, dir, &tokens)
	ctx := t.Context()
	v1, _ := c.For(ctx, "v1")
	v2, _ := c.For(ctx, "v2")
	pid, _ := v2.Ledger.GetV2PartiesParticipantIdWithResponse(ctx)
	syncs, _ := v1.Ledger.GetV2StateConnectedSynchronizersWithResponse(ctx, nil)
	sync := (*syncs.JSON200.ConnectedSynchronizers)[0].SynchronizerId
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	cohosts := []string{pid.JSON200.ParticipantId}
	g, err := v1.Ledger.PostV2PartiesExternalGenerateTopologyWithResponse(ctx, ledgerapi.GenerateExternalPartyTopologyRequest{
		Synchronizer: sync, PartyHint: "shared", OtherConfirmingParticipantUids: &cohosts,
		PublicKey: ledgerapi.SigningPublicKey{Format: "CRYPTO_KEY_FORMAT_RAW", KeyData: base64.StdEncoding.EncodeToString(pub), KeySpec: topology.SpecEd25519},
	})
	if err != nil || g.JSON200 == nil {
		t.Fatalf("generate: %v %s", err, g.Body)
	}
	party := g.JSON200.PartyId
	mh, _ := base64.StdEncoding.DecodeString(g.JSON200.MultiHash)
	req := ledgerapi.AllocateExternalPartyRequest{Synchronizer: sync, MultiHashSignatures: &[]ledgerapi.Signature{{
		Format: "SIGNATURE_FORMAT_CONCAT", Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, mh)),
		SignedBy: g.JSON200.PublicKeyFingerprint, SigningAlgorithmSpec: "SIGNING_ALGORITHM_SPEC_ED25519",
	}}}
	for _, tx := range g.JSON200.TopologyTransactions {
		req.OnboardingTransactions = append(req.OnboardingTransactions, ledgerapi.SignedTransaction{Transaction: tx})
	}
	if r, err := v1.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, req); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("allocate: %v %s", err, r.Body)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	var st struct {
		Hosting map[string]struct {
			Proposal struct {
				SignedBy []string `json:"signedBy"`
			} `json:"proposal"`
		} `json:"hosting"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	// The proposal is signed by the party and the allocating participant, not by the co-host.
	_, cohostNS, _ := strings.Cut(pid.JSON200.ParticipantId, "::")
	if p := st.Hosting[party].Proposal.SignedBy; len(p) != 2 || slices.Contains(p, cohostNS) {
		t.Fatalf("proposal signed by %v: want the party and the allocating participant, not the co-host %s", p, cohostNS)
	}
}

// TestExternalPartyRules: the sandbox ledger's own checks, beyond those
// release 2.0 makes before calling it.
func TestExternalPartyRules(t *testing.T) {
	var tokens atomic.Int32
	_, c := open(t, t.TempDir(), &tokens)
	ctx := t.Context()
	v1, err := c.For(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := v1.Ledger.GetV2PartiesParticipantIdWithResponse(ctx)
	syncs, _ := v1.Ledger.GetV2StateConnectedSynchronizersWithResponse(ctx, nil)
	sync := (*syncs.JSON200.ConnectedSynchronizers)[0].SynchronizerId
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	key := ledgerapi.SigningPublicKey{Format: topology.KeyFormatSPKI, KeyData: base64.StdEncoding.EncodeToString(der), KeySpec: topology.SpecEd25519}
	uids := func(u ...string) *[]string { return &u }

	generates := []struct {
		name string
		req  ledgerapi.GenerateExternalPartyTopologyRequest
		want string // "" = 200
	}{
		{"default threshold is every confirmer", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g1", PublicKey: key}, ""},
		{"another synchronizer", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: "other::1220", PartyHint: "g2", PublicKey: key}, "not connected to synchronizer"},
		{"threshold above the confirmers", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g3", PublicKey: key, ConfirmationThreshold: ptr(int32(2))}, "exceeds the 1 confirming participants"},
		{"nobody confirms", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g4", PublicKey: key, LocalParticipantObservationOnly: ptr(true)}, "at least one participant must confirm"},
		{"this participant as a co-host", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g5", PublicKey: key, ObservingParticipantUids: uids(self.JSON200.ParticipantId)}, "is this participant"},
		{"a co-host twice", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g6", PublicKey: key, OtherConfirmingParticipantUids: uids("p::1220aa"), ObservingParticipantUids: uids("p::1220aa")}, "named more than once"},
		{"raw Ed25519 key", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g7", PublicKey: ledgerapi.SigningPublicKey{Format: "CRYPTO_KEY_FORMAT_RAW", KeyData: base64.StdEncoding.EncodeToString(pub), KeySpec: topology.SpecEd25519}}, ""},
		{"raw key of 31 bytes", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g7b", PublicKey: ledgerapi.SigningPublicKey{Format: "CRYPTO_KEY_FORMAT_RAW", KeyData: base64.StdEncoding.EncodeToString(pub[:31]), KeySpec: topology.SpecEd25519}}, "has 32 bytes, this one 31"},
		{"raw key of an EC spec", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g7c", PublicKey: ledgerapi.SigningPublicKey{Format: "CRYPTO_KEY_FORMAT_RAW", KeyData: base64.StdEncoding.EncodeToString(pub), KeySpec: topology.SpecP256}}, "supported for key spec"},
		{"unknown key format", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g7d", PublicKey: ledgerapi.SigningPublicKey{Format: "CRYPTO_KEY_FORMAT_DER", KeyData: key.KeyData, KeySpec: topology.SpecEd25519}}, "not supported"},
		{"key of another spec", ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: "g8", PublicKey: ledgerapi.SigningPublicKey{Format: topology.KeyFormatSPKI, KeyData: key.KeyData, KeySpec: topology.SpecP256}}, "is not an EC P-256 key"},
	}
	for _, tt := range generates {
		t.Run("generate "+tt.name, func(t *testing.T) {
			r, err := v1.Ledger.PostV2PartiesExternalGenerateTopologyWithResponse(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if r.StatusCode() != http.StatusOK {
					t.Fatalf("got %d %s, want 200", r.StatusCode(), r.Body)
				}
				// The same key in either format is the same party.
				if _, fp, _ := strings.Cut(r.JSON200.PartyId, "::"); fp != r.JSON200.PublicKeyFingerprint || fp != topology.PublicKeyFingerprint(true, der) {
					t.Fatalf("party %s, fingerprint %s: want the key's fingerprint %s", r.JSON200.PartyId, r.JSON200.PublicKeyFingerprint, topology.PublicKeyFingerprint(true, der))
				}
				return
			}
			if r.StatusCode() != http.StatusBadRequest || !strings.Contains(string(r.Body), "INVALID_ARGUMENT") || !strings.Contains(string(r.Body), tt.want) {
				t.Fatalf("got %d %s, want 400 INVALID_ARGUMENT with %q", r.StatusCode(), r.Body, tt.want)
			}
		})
	}

	// topologyFor generates hint's topology and returns its transactions and multi-hash.
	topologyFor := func(t *testing.T, hint string) ([][]byte, []byte, string) {
		t.Helper()
		g, err := v1.Ledger.PostV2PartiesExternalGenerateTopologyWithResponse(ctx, ledgerapi.GenerateExternalPartyTopologyRequest{Synchronizer: sync, PartyHint: hint, PublicKey: key})
		if err != nil || g.JSON200 == nil {
			t.Fatalf("generate: %v %s", err, g.Body)
		}
		var txs [][]byte
		for _, tx := range g.JSON200.TopologyTransactions {
			raw, _ := base64.StdEncoding.DecodeString(tx)
			txs = append(txs, raw)
		}
		mh, _ := base64.StdEncoding.DecodeString(g.JSON200.MultiHash)
		return txs, mh, g.JSON200.PublicKeyFingerprint
	}
	sig := func(fp string, msg []byte) ledgerapi.Signature {
		return ledgerapi.Signature{Format: "SIGNATURE_FORMAT_CONCAT", Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, msg)), SignedBy: fp, SigningAlgorithmSpec: "SIGNING_ALGORITHM_SPEC_ED25519"}
	}
	allocates := []struct {
		name   string
		req    func(txs [][]byte, mh []byte, fp string) ledgerapi.AllocateExternalPartyRequest
		status int
		want   string
	}{
		{"each transaction signed instead of the multi-hash", func(txs [][]byte, mh []byte, fp string) ledgerapi.AllocateExternalPartyRequest {
			r := ledgerapi.AllocateExternalPartyRequest{Synchronizer: sync}
			for _, tx := range txs {
				r.OnboardingTransactions = append(r.OnboardingTransactions, ledgerapi.SignedTransaction{Transaction: base64.StdEncoding.EncodeToString(tx), Signatures: &[]ledgerapi.Signature{sig(fp, topology.TransactionHash(tx))}})
			}
			return r
		}, http.StatusOK, ""},
		{"unsigned", func(txs [][]byte, mh []byte, fp string) ledgerapi.AllocateExternalPartyRequest {
			r := ledgerapi.AllocateExternalPartyRequest{Synchronizer: sync}
			for _, tx := range txs {
				r.OnboardingTransactions = append(r.OnboardingTransactions, ledgerapi.SignedTransaction{Transaction: base64.StdEncoding.EncodeToString(tx)})
			}
			return r
		}, http.StatusBadRequest, "not signed by the party's key"},
		{"without the namespace delegation", func(txs [][]byte, mh []byte, fp string) ledgerapi.AllocateExternalPartyRequest {
			return ledgerapi.AllocateExternalPartyRequest{Synchronizer: sync, MultiHashSignatures: &[]ledgerapi.Signature{sig(fp, topology.MultiHash(txs[1:]))},
				OnboardingTransactions: []ledgerapi.SignedTransaction{{Transaction: base64.StdEncoding.EncodeToString(txs[1])}, {Transaction: base64.StdEncoding.EncodeToString(txs[2])}}}
		}, http.StatusBadRequest, "provide its NamespaceDelegation"},
		{"on another synchronizer", func(txs [][]byte, mh []byte, fp string) ledgerapi.AllocateExternalPartyRequest {
			r := ledgerapi.AllocateExternalPartyRequest{Synchronizer: "other::1220", MultiHashSignatures: &[]ledgerapi.Signature{sig(fp, mh)}}
			for _, tx := range txs {
				r.OnboardingTransactions = append(r.OnboardingTransactions, ledgerapi.SignedTransaction{Transaction: base64.StdEncoding.EncodeToString(tx)})
			}
			return r
		}, http.StatusBadRequest, "not connected to synchronizer"},
	}
	for i, tt := range allocates {
		t.Run("allocate "+tt.name, func(t *testing.T) {
			txs, mh, fp := topologyFor(t, "a"+string(rune('0'+i)))
			r, err := v1.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, tt.req(txs, mh, fp))
			if err != nil {
				t.Fatal(err)
			}
			if r.StatusCode() != tt.status || !strings.Contains(string(r.Body), tt.want) {
				t.Fatalf("got %d %s, want %d with %q", r.StatusCode(), r.Body, tt.status, tt.want)
			}
		})
	}
	t.Run("a party hosted elsewhere only", func(t *testing.T) {
		v2, _ := c.For(ctx, "v2")
		txs, mh, fp := topologyFor(t, "elsewhere")
		// v2 did not generate it: its participant is not among the hosts.
		r, _ := v2.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, ledgerapi.AllocateExternalPartyRequest{Synchronizer: sync,
			MultiHashSignatures: &[]ledgerapi.Signature{sig(fp, mh)}, OnboardingTransactions: []ledgerapi.SignedTransaction{
				{Transaction: base64.StdEncoding.EncodeToString(txs[0])}, {Transaction: base64.StdEncoding.EncodeToString(txs[1])}, {Transaction: base64.StdEncoding.EncodeToString(txs[2])}}})
		if r.StatusCode() != http.StatusBadRequest || !strings.Contains(string(r.Body), "must be hosted on this participant") {
			t.Fatalf("got %d %s, want 400 (not hosted here)", r.StatusCode(), r.Body)
		}
	})
}

func ptr[T any](v T) *T { return &v }
