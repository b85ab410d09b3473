package platform_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// partyKey is an external party's key pair as a wallet holds it.
type partyKey struct {
	spec      platformapi.KeySpec
	spki      []byte
	sign      func(msg []byte) []byte
	format    platformapi.SignatureFormat
	algorithm platformapi.SigningAlgorithmSpec
	// fingerprinted is what Canton's fingerprint hashes: the 32 key bytes
	// of an Ed25519 key, the SubjectPublicKeyInfo of an EC key.
	fingerprinted []byte
}

func newPartyKey(t *testing.T, spec platformapi.KeySpec) partyKey {
	t.Helper()
	switch spec {
	case platformapi.KeySpecEd25519:
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		der, _ := x509.MarshalPKIXPublicKey(pub)
		return partyKey{spec: spec, spki: der, fingerprinted: pub, format: platformapi.SignatureFormatConcat, algorithm: platformapi.SigningAlgorithmEd25519,
			sign: func(msg []byte) []byte { return ed25519.Sign(priv, msg) }}
	case platformapi.KeySpecEcP256:
		priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
		return partyKey{spec: spec, spki: der, fingerprinted: der, format: platformapi.SignatureFormatDer, algorithm: platformapi.SigningAlgorithmEcDsaSha256,
			sign: func(msg []byte) []byte {
				d := sha256.Sum256(msg)
				sig, _ := ecdsa.SignASN1(rand.Reader, priv, d[:])
				return sig
			}}
	case platformapi.KeySpecEcSecp256k1:
		priv, _ := secp256k1.GeneratePrivateKey()
		params, _ := asn1.Marshal(asn1.ObjectIdentifier{1, 3, 132, 0, 10})
		point := priv.PubKey().SerializeUncompressed()
		der, _ := asn1.Marshal(struct {
			Algorithm pkix.AlgorithmIdentifier
			PublicKey asn1.BitString
		}{pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}, Parameters: asn1.RawValue{FullBytes: params}},
			asn1.BitString{Bytes: point, BitLength: 8 * len(point)}})
		return partyKey{spec: spec, spki: der, fingerprinted: der, format: platformapi.SignatureFormatDer, algorithm: platformapi.SigningAlgorithmEcDsaSha256,
			sign: func(msg []byte) []byte {
				d := sha256.Sum256(msg)
				return secpecdsa.Sign(priv, d[:]).Serialize()
			}}
	}
	t.Fatalf("no key for %s", spec)
	return partyKey{}
}

// cantonHash is Canton's purpose-tagged SHA-256 multihash, written out
// here independently of the code under test.
func cantonHash(purpose uint32, data []byte) []byte {
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], purpose)
	h := sha256.Sum256(append(p[:], data...))
	return append([]byte{0x12, 0x20}, h[:]...)
}

// cantonMultiHash is the hash a party signs over a set of topology transactions.
func cantonMultiHash(txs [][]byte) []byte {
	var hashes [][]byte
	for _, tx := range txs {
		hashes = append(hashes, cantonHash(11, tx))
	}
	slices.SortFunc(hashes, func(a, b []byte) int { return strings.Compare(hex.EncodeToString(a), hex.EncodeToString(b)) })
	var buf bytes.Buffer
	_ = binary.Write(&buf, binary.BigEndian, uint32(len(hashes)))
	for _, h := range hashes {
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(h)))
		buf.Write(h)
	}
	return cantonHash(55, buf.Bytes())
}

// ledgerCalls records the paths the sandbox ledger is asked for, and
// injects the failures a test sets.
type ledgerCalls struct {
	faults
	mu    sync.Mutex
	paths []string
}

func (l *ledgerCalls) hook(up string, r *http.Request) int {
	if up == "ledger" {
		l.mu.Lock()
		l.paths = append(l.paths, r.URL.Path)
		l.mu.Unlock()
	}
	return l.faults.hook(up, r)
}

// since returns the ledger paths called since mark (a length of paths).
func (l *ledgerCalls) since(mark int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.paths[mark:]...)
}

func (l *ledgerCalls) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.paths)
}

func participantOf(t *testing.T, s *apitest.Server, name string) string {
	t.Helper()
	r, err := s.Platform.GetIdentityDumpWithResponse(t.Context(), name)
	if err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("identity dump of %s: %v %s", name, err, r.Body)
	}
	var dump struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.Body, &dump); err != nil {
		t.Fatal(err)
	}
	return dump.ID
}

// TestExternalParties drives generate-topology and allocate against the
// sandbox ledger of validator-1, with validator-2's participant as a co-host.
func TestExternalParties(t *testing.T) {
	t.Parallel()
	var calls ledgerCalls
	s := apitest.Start(t, apitest.Options{
		Config: func(c *config.Config) { c.UpstreamTimeout = time.Second },
		App:    []app.Option{app.With(func(o *sandbox.Options) { o.Fault = calls.hook })},
	})
	createValidator(t, s)
	const cohostValidator = "validator-2"
	if r, err := s.Management.CreateValidatorWithResponse(t.Context(), validatorDto(cohostValidator)); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create %s: %v %s", cohostValidator, err, r.Body)
	}
	s.Provisioned(t, cohostValidator)
	ctx := t.Context()
	self, cohost := participantOf(t, s, validator), participantOf(t, s, cohostValidator)
	unknownHost := "participant-gone::1220" + strings.Repeat("ab", 32)

	generate := func(t *testing.T, name string, req platformapi.GenerateTopologyRequest) *platformapi.GenerateExternalPartyTopologyResponse {
		t.Helper()
		r, err := s.Platform.GenerateExternalPartyTopologyWithResponse(ctx, name, req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	allocate := func(t *testing.T, name string, req platformapi.AllocateExternalPartyRequest) *platformapi.AllocateExternalPartyResponse {
		t.Helper()
		r, err := s.Platform.AllocateExternalPartyWithResponse(ctx, name, req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// signed is the allocate request for a generated topology, signed by k.
	signed := func(k partyKey, g *platformapi.GenerateTopologyResponse) platformapi.AllocateExternalPartyRequest {
		return platformapi.AllocateExternalPartyRequest{
			SynchronizerId: g.SynchronizerId, TopologyTransactions: g.TopologyTransactions,
			Signature: k.sign(g.MultiHash), PublicKeyFingerprint: g.PublicKeyFingerprint,
			SignatureFormat: &k.format, SigningAlgorithmSpec: &k.algorithm,
		}
	}
	listed := func(t *testing.T, name, party string) bool {
		t.Helper()
		r, err := s.Platform.ListPartiesWithResponse(ctx, name, &platformapi.ListPartiesParams{PartyId: &party})
		if err != nil || r.JSON200 == nil {
			t.Fatalf("list parties: %v %s", err, r.Body)
		}
		for _, p := range *r.JSON200 {
			if p.Party == party {
				if p.IsLocal == nil || !*p.IsLocal {
					t.Fatalf("party %s: got isLocal %v, want true", party, p.IsLocal)
				}
				return true
			}
		}
		return false
	}
	wantError := func(t *testing.T, status int, raw []byte, wantStatus int, want string) {
		t.Helper()
		expect(t, "status", status, raw, wantStatus)
		if msg, _ := platformError(t, raw)["error"].(string); !strings.Contains(msg, want) {
			t.Fatalf("error: got %q, want it to contain %q", msg, want)
		}
	}

	t.Run("allocated", func(t *testing.T) {
		tests := []struct {
			name       string
			spec       platformapi.KeySpec
			hosts      []platformapi.HostingParticipant
			observe    bool
			threshold  int32
			wantOwing  []platformapi.HostingParticipant
			wantOnHost bool // listed on the co-host's validator too
		}{
			{name: "Ed25519, hosted here only", spec: platformapi.KeySpecEd25519},
			{name: "EC P-256", spec: platformapi.KeySpecEcP256},
			{name: "EC secp256k1", spec: platformapi.KeySpecEcSecp256k1},
			{name: "co-host confirming, threshold 2", spec: platformapi.KeySpecEd25519, threshold: 2,
				hosts:     []platformapi.HostingParticipant{{ParticipantUid: cohost, Permission: platformapi.HostingPermissionConfirming}},
				wantOwing: []platformapi.HostingParticipant{{ParticipantUid: cohost, Permission: platformapi.HostingPermissionConfirming}}},
			{name: "observing here, co-host confirms", spec: platformapi.KeySpecEd25519, observe: true,
				hosts:     []platformapi.HostingParticipant{{ParticipantUid: cohost, Permission: platformapi.HostingPermissionConfirming}},
				wantOwing: []platformapi.HostingParticipant{{ParticipantUid: cohost, Permission: platformapi.HostingPermissionConfirming}}},
			{name: "co-host observing", spec: platformapi.KeySpecEd25519,
				hosts:     []platformapi.HostingParticipant{{ParticipantUid: cohost, Permission: platformapi.HostingPermissionObserving}},
				wantOwing: []platformapi.HostingParticipant{{ParticipantUid: cohost, Permission: platformapi.HostingPermissionObserving}}},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				k := newPartyKey(t, tt.spec)
				hint := "ext-" + string(rune('a'+i))
				req := platformapi.GenerateTopologyRequest{PartyHint: hint, PublicKeyBase64: k.spki, KeySpec: &tt.spec}
				if tt.hosts != nil {
					req.Hosts = &tt.hosts
				}
				if tt.observe {
					req.LocalParticipantObservationOnly = ptr(true)
				}
				if tt.threshold != 0 {
					req.ConfirmationThreshold = &tt.threshold
				}
				g := generate(t, validator, req)
				expect(t, "generate", g.StatusCode(), g.Body, http.StatusOK)
				top := g.JSON200
				fp := hex.EncodeToString(cantonHash(12, k.fingerprinted))
				if top.PublicKeyFingerprint != fp || top.PartyId != hint+"::"+fp {
					t.Fatalf("party %s, fingerprint %s: want %s::%s (Canton's fingerprint of the key)", top.PartyId, top.PublicKeyFingerprint, hint, fp)
				}
				if !bytes.Equal(top.MultiHash, cantonMultiHash(top.TopologyTransactions)) {
					t.Fatalf("multiHash %x is not Canton's multi-hash of the %d transactions", top.MultiHash, len(top.TopologyTransactions))
				}
				if top.SynchronizerId == "" || len(top.OtherHostingParticipantUids) != len(tt.hosts) {
					t.Fatalf("synchronizerId %q, otherHostingParticipantUids %v: want a synchronizer and the %d hosts", top.SynchronizerId, top.OtherHostingParticipantUids, len(tt.hosts))
				}

				a := allocate(t, validator, signed(k, top))
				expect(t, "allocate", a.StatusCode(), a.Body, http.StatusOK)
				got := a.JSON200
				if got.PartyId != top.PartyId || got.Complete != (len(tt.wantOwing) == 0) || got.Serial == nil || *got.Serial != 1 {
					t.Fatalf("allocated: got %s, want party %s, complete %v, serial 1", a.Body, top.PartyId, len(tt.wantOwing) == 0)
				}
				if len(got.Hosts) != len(tt.wantOwing) || (len(got.Hosts) > 0 && got.Hosts[0] != tt.wantOwing[0]) {
					t.Fatalf("hosts owing approval: got %v, want %v", got.Hosts, tt.wantOwing)
				}
				if !listed(t, validator, top.PartyId) {
					t.Fatalf("party %s is not listed on %s", top.PartyId, validator)
				}
				if listed(t, cohostValidator, top.PartyId) {
					t.Fatalf("party %s is listed on the co-host before it approved", top.PartyId)
				}
			})
		}
	})

	t.Run("generate refused", func(t *testing.T) {
		ed := newPartyKey(t, platformapi.KeySpecEd25519)
		p256 := newPartyKey(t, platformapi.KeySpecEcP256)
		confirm := func(uid string) platformapi.HostingParticipant {
			return platformapi.HostingParticipant{ParticipantUid: uid, Permission: platformapi.HostingPermissionConfirming}
		}
		observe := func(uid string) platformapi.HostingParticipant {
			return platformapi.HostingParticipant{ParticipantUid: uid, Permission: platformapi.HostingPermissionObserving}
		}
		tests := []struct {
			name      string
			validator string
			body      string // raw JSON when set
			req       platformapi.GenerateTopologyRequest
			status    int
			want      string
			generated bool // the ledger was asked to generate
		}{
			{name: "threshold above the confirming participants", req: platformapi.GenerateTopologyRequest{PartyHint: "t", PublicKeyBase64: ed.spki, ConfirmationThreshold: ptr(int32(2)),
				Hosts: &[]platformapi.HostingParticipant{observe(cohost)}}, status: http.StatusBadRequest, want: "confirmationThreshold: 2 exceeds the number of confirming participants, 1"},
			{name: "observing here and no confirming host", req: platformapi.GenerateTopologyRequest{PartyHint: "t", PublicKeyBase64: ed.spki, LocalParticipantObservationOnly: ptr(true),
				Hosts: &[]platformapi.HostingParticipant{observe(cohost)}}, status: http.StatusBadRequest, want: "confirmationThreshold: 1 exceeds the number of confirming participants, 0"},
			{name: "a host is this participant", req: platformapi.GenerateTopologyRequest{PartyHint: "t", PublicKeyBase64: ed.spki,
				Hosts: &[]platformapi.HostingParticipant{confirm(cohost), confirm(self)}}, status: http.StatusBadRequest, want: "hosts.1.participantUid: " + self + " is this validator's participant"},
			{name: "a host named twice", req: platformapi.GenerateTopologyRequest{PartyHint: "t", PublicKeyBase64: ed.spki,
				Hosts: &[]platformapi.HostingParticipant{confirm(cohost), observe(cohost)}}, status: http.StatusBadRequest, want: "hosts.1.participantUid: participant " + cohost + " is named more than once"},
			{name: "key not Base64", body: `{"partyHint":"t","publicKeyBase64":"not*base64!"}`, status: http.StatusBadRequest, want: "publicKeyBase64"},
			{name: "key not a SubjectPublicKeyInfo", req: platformapi.GenerateTopologyRequest{PartyHint: "t", PublicKeyBase64: ed.fingerprinted},
				status: http.StatusBadRequest, want: "publicKeyBase64: must be the Base64 of a DER X.509 SubjectPublicKeyInfo of a key of keySpec Ed25519"},
			{name: "key of another spec", req: platformapi.GenerateTopologyRequest{PartyHint: "t", PublicKeyBase64: p256.spki},
				status: http.StatusBadRequest, want: "is not an Ed25519 key"},
			{name: "unknown key spec", body: `{"partyHint":"t","publicKeyBase64":"` + base64.StdEncoding.EncodeToString(ed.spki) + `","keySpec":"Rsa2048"}`, status: http.StatusBadRequest, want: "keySpec"},
			{name: "party hint the ledger refuses", req: platformapi.GenerateTopologyRequest{PartyHint: "no::colons", PublicKeyBase64: ed.spki},
				status: http.StatusUnprocessableEntity, want: "INVALID_ARGUMENT", generated: true},
			{name: "unknown validator", validator: "validator-9", req: platformapi.GenerateTopologyRequest{PartyHint: "t", PublicKeyBase64: ed.spki},
				status: http.StatusNotFound, want: `validator "validator-9" not found`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				name := validator
				if tt.validator != "" {
					name = tt.validator
				}
				mark := calls.mark()
				var status int
				var raw []byte
				if tt.body != "" {
					r, err := s.Platform.GenerateExternalPartyTopologyWithBodyWithResponse(ctx, name, "application/json", strings.NewReader(tt.body))
					if err != nil {
						t.Fatal(err)
					}
					status, raw = r.StatusCode(), r.Body
				} else {
					r := generate(t, name, tt.req)
					status, raw = r.StatusCode(), r.Body
				}
				wantError(t, status, raw, tt.status, tt.want)
				if got := slices.Contains(calls.since(mark), "/v2/parties/external/generate-topology"); got != tt.generated {
					t.Fatalf("ledger asked to generate: got %v, want %v (calls %v)", got, tt.generated, calls.since(mark))
				}
			})
		}
	})

	t.Run("allocate refused", func(t *testing.T) {
		k := newPartyKey(t, platformapi.KeySpecEd25519)
		g := generate(t, validator, platformapi.GenerateTopologyRequest{PartyHint: "refused", PublicKeyBase64: k.spki})
		expect(t, "generate", g.StatusCode(), g.Body, http.StatusOK)
		top := g.JSON200
		other := newPartyKey(t, platformapi.KeySpecEd25519)
		der := platformapi.SignatureFormatDer
		tests := []struct {
			name      string
			validator string
			req       func() platformapi.AllocateExternalPartyRequest
			status    int
			want      string
			called    bool // the ledger was asked to allocate
		}{
			{"signature by another key", "", func() platformapi.AllocateExternalPartyRequest {
				return signed(other, top)
			}, http.StatusUnprocessableEntity, "INVALID_TOPOLOGY_TX_SIGNATURE_ERROR", true},
			{"signature over something else", "", func() platformapi.AllocateExternalPartyRequest {
				r := signed(k, top)
				r.Signature = k.sign([]byte("something else"))
				return r
			}, http.StatusUnprocessableEntity, "does not verify", true},
			{"fingerprint of another key", "", func() platformapi.AllocateExternalPartyRequest {
				r := signed(k, top)
				r.PublicKeyFingerprint = hex.EncodeToString(cantonHash(12, other.fingerprinted))
				return r
			}, http.StatusUnprocessableEntity, "not the party's key", true},
			{"format that no Ed25519 signature has", "", func() platformapi.AllocateExternalPartyRequest {
				r := signed(k, top)
				r.SignatureFormat = &der
				return r
			}, http.StatusBadRequest, "signatureFormat: SIGNATURE_FORMAT_DER does not go with SIGNING_ALGORITHM_SPEC_ED25519", false},
			{"transactions that are not topology transactions", "", func() platformapi.AllocateExternalPartyRequest {
				r := signed(k, top)
				r.TopologyTransactions = [][]byte{[]byte("hello")}
				return r
			}, http.StatusBadRequest, "topologyTransactions.0: is not a Canton topology transaction", false},
			{"no PartyToParticipant", "", func() platformapi.AllocateExternalPartyRequest {
				r := signed(k, top)
				r.TopologyTransactions = top.TopologyTransactions[:1]
				return r
			}, http.StatusBadRequest, "topologyTransactions: no transaction maps the party", false},
			{"unknown validator", "validator-9", func() platformapi.AllocateExternalPartyRequest {
				return signed(k, top)
			}, http.StatusNotFound, `validator "validator-9" not found`, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				name := validator
				if tt.validator != "" {
					name = tt.validator
				}
				mark := calls.mark()
				r := allocate(t, name, tt.req())
				wantError(t, r.StatusCode(), r.Body, tt.status, tt.want)
				if got := slices.Contains(calls.since(mark), "/v2/parties/external/allocate"); got != tt.called {
					t.Fatalf("ledger asked to allocate: got %v, want %v", got, tt.called)
				}
				if listed(t, validator, top.PartyId) {
					t.Fatalf("party %s is allocated after a refused allocate", top.PartyId)
				}
			})
		}
		// A signature the ledger refused consumed nothing: the right one still allocates.
		a := allocate(t, validator, signed(k, top))
		expect(t, "allocate after refusals", a.StatusCode(), a.Body, http.StatusOK)
		if !a.JSON200.Complete || !listed(t, validator, top.PartyId) {
			t.Fatalf("allocated: got %s, want complete and listed", a.Body)
		}
		again := allocate(t, validator, signed(k, top))
		wantError(t, again.StatusCode(), again.Body, http.StatusConflict, "MULTI_HASH_ALREADY_USED")
	})

	t.Run("unknown co-host", func(t *testing.T) {
		k := newPartyKey(t, platformapi.KeySpecEd25519)
		// generate does not check that hosts exist.
		g := generate(t, validator, platformapi.GenerateTopologyRequest{PartyHint: "lonely", PublicKeyBase64: k.spki,
			Hosts: &[]platformapi.HostingParticipant{{ParticipantUid: unknownHost, Permission: platformapi.HostingPermissionConfirming}}})
		expect(t, "generate", g.StatusCode(), g.Body, http.StatusOK)
		req := signed(k, g.JSON200)
		a := allocate(t, validator, req)
		wantError(t, a.StatusCode(), a.Body, http.StatusNotFound, "UNKNOWN_MEMBERS: The following members are not known on the synchronizer: "+unknownHost)
		if listed(t, validator, g.JSON200.PartyId) {
			t.Fatal("the party is allocated although a co-host is unknown")
		}
		// The signature was accepted before the allocation failed: the multi-hash is spent.
		again := allocate(t, validator, req)
		wantError(t, again.StatusCode(), again.Body, http.StatusConflict, "MULTI_HASH_ALREADY_USED")
	})

	t.Run("502", func(t *testing.T) {
		k := newPartyKey(t, platformapi.KeySpecEd25519)
		g := generate(t, validator, platformapi.GenerateTopologyRequest{PartyHint: "unreached", PublicKeyBase64: k.spki})
		expect(t, "generate", g.StatusCode(), g.Body, http.StatusOK)
		onlyExternal := upstreamFault{"only allocate fails", func(up string, r *http.Request) int {
			if strings.HasPrefix(r.URL.Path, "/v2/parties/external/") {
				return http.StatusServiceUnavailable
			}
			return 0
		}, "INJECTED_FAILURE"}
		faults := []upstreamFault{ledgerUnavailable, ledgerTooSlow(3 * time.Second), onlyExternal}
		for _, tt := range faults {
			t.Run(tt.name, func(t *testing.T) {
				calls.set(tt.fault)
				defer calls.set(nil)
				gen := generate(t, validator, platformapi.GenerateTopologyRequest{PartyHint: "unreached", PublicKeyBase64: k.spki})
				al := allocate(t, validator, signed(k, g.JSON200))
				for op, r := range map[string]struct {
					status int
					raw    []byte
				}{"generate": {gen.StatusCode(), gen.Body}, "allocate": {al.StatusCode(), al.Body}} {
					expect(t, op, r.status, r.raw, http.StatusBadGateway)
					body := platformError(t, r.raw)
					if ep, _ := body["endpoint"].(string); !strings.HasPrefix(ep, "http://127.0.0.1:") || !strings.Contains(ep, "/v2/") {
						t.Fatalf("%s endpoint: got %q", op, ep)
					}
					if msg, _ := body["error"].(string); !strings.Contains(msg, tt.want) {
						t.Fatalf("%s error: got %q, want it to contain %q", op, msg, tt.want)
					}
				}
			})
		}
		// The ledger never saw a signature: the topology can still be allocated.
		a := allocate(t, validator, signed(k, g.JSON200))
		expect(t, "allocate once the ledger answers", a.StatusCode(), a.Body, http.StatusOK)
	})

	t.Run("audited without key material", func(t *testing.T) {
		k := newPartyKey(t, platformapi.KeySpecEd25519)
		g := generate(t, validator, platformapi.GenerateTopologyRequest{PartyHint: "audited", PublicKeyBase64: k.spki})
		expect(t, "generate", g.StatusCode(), g.Body, http.StatusOK)
		req := signed(k, g.JSON200)
		a := allocate(t, validator, req)
		expect(t, "allocate", a.StatusCode(), a.Body, http.StatusOK)
		entries, err := s.App.Store.FindAudit(ctx, domain.AuditFilter{Validator: validator, Page: domain.Page{Limit: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) < 2 || entries[0].Operation != "allocateExternalParty" || entries[0].Status != http.StatusOK ||
			entries[1].Operation != "generateExternalPartyTopology" || entries[1].Status != http.StatusOK {
			t.Fatalf("newest audit entries: got %+v, want allocateExternalParty 200 after generateExternalPartyTopology 200", entries[:min(2, len(entries))])
		}
		statuses := map[string]map[int]bool{}
		for _, e := range entries {
			if statuses[e.Operation] == nil {
				statuses[e.Operation] = map[int]bool{}
			}
			statuses[e.Operation][e.Status] = true
			if e.Subject == "" || e.RequestID == "" || len(e.Targets) != 0 {
				t.Fatalf("entry %+v: want a subject, a request id and no targets", e)
			}
		}
		for op, want := range map[string][]int{
			"generateExternalPartyTopology": {200, 400, 422, 502},
			"allocateExternalParty":         {200, 400, 404, 409, 422, 502},
		} {
			for _, st := range want {
				if !statuses[op][st] {
					t.Errorf("%s: no audit entry with status %d (got %v)", op, st, statuses[op])
				}
			}
		}
		logs := s.Logs()
		for what, secret := range map[string]string{
			"public key":      base64.StdEncoding.EncodeToString(k.spki),
			"signature":       base64.StdEncoding.EncodeToString(req.Signature),
			"multi-hash":      base64.StdEncoding.EncodeToString(g.JSON200.MultiHash),
			"hex signature":   hex.EncodeToString(req.Signature),
			"topology (head)": base64.StdEncoding.EncodeToString(g.JSON200.TopologyTransactions[0])[:40],
		} {
			if strings.Contains(logs, secret) {
				t.Errorf("the %s is in the log", what)
			}
		}
	})
}
