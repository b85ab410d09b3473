package platform_test

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// adminUnavailable and adminTooSlow make the sandbox participants' admin API fail.
var adminUnavailable = upstreamFault{"admin API unavailable", func(up string, r *http.Request) int {
	if up == upstream.Admin {
		return http.StatusServiceUnavailable
	}
	return 0
}, "the participant admin API is unavailable"}

func adminTooSlow(d time.Duration) upstreamFault {
	return upstreamFault{"admin API too slow", func(up string, r *http.Request) int {
		if up == upstream.Admin {
			// Not cut short by the call's context: gRPC hands the server the
			// client's remaining time, so a server that stopped at its own
			// deadline could answer a moment before the client's and succeed.
			time.Sleep(d)
		}
		return 0
	}, "did not answer in time"}
}

// hostingEnv is two validators on the sandbox's one synchronizer.
type hostingEnv struct {
	s              *apitest.Server
	faults         *faults
	self, cohost   string // participant UIDs of validator-1 and validator-2
	cohostVal      string
	unknownParty   string
	unknownHostUID string
}

func startHosting(t *testing.T) hostingEnv {
	t.Helper()
	fl := &faults{}
	s := apitest.Start(t, apitest.Options{
		Config: func(c *config.Config) { c.UpstreamTimeout = 500 * time.Millisecond },
		App:    []app.Option{app.With(func(o *sandbox.Options) { o.Fault = fl.hook })},
	})
	createValidator(t, s)
	const cohost = "validator-2"
	if r, err := s.Management.CreateValidatorWithResponse(t.Context(), validatorDto(cohost)); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create %s: %v %s", cohost, err, r.Body)
	}
	s.Provisioned(t, cohost)
	return hostingEnv{s: s, faults: fl, self: participantOf(t, s, validator), cohost: participantOf(t, s, cohost), cohostVal: cohost,
		unknownParty: "nobody::1220" + strings.Repeat("cd", 32), unknownHostUID: "participant-gone::1220" + strings.Repeat("ab", 32)}
}

// TestMultiHostedParty is the whole flow on the sandbox: generate-topology
// naming a co-host, the party signs (Ed25519), allocate leaves it
// incomplete, the co-host sees the proposal and approves it, both list the
// party with both hosts; then the party changes its hosting (prepare, sign,
// submit) twice: dropping the co-host, and adding it back, which it approves.
func TestMultiHostedParty(t *testing.T) {
	t.Parallel()
	e := startHosting(t)
	s, ctx := e.s, t.Context()
	k := newPartyKey(t, platformapi.KeySpecEd25519)
	confirm := func(uid string) platformapi.HostingParticipant {
		return platformapi.HostingParticipant{ParticipantUid: uid, Permission: platformapi.HostingPermissionConfirming}
	}

	// The co-host is known on the synchronizer.
	look, err := s.Platform.LookupParticipantWithResponse(ctx, validator, &platformapi.LookupParticipantParams{ParticipantUid: e.cohost[:strings.Index(e.cohost, "::")+6]})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "lookup", look.StatusCode(), look.Body, http.StatusOK)
	if !look.JSON200.Found || !slices.Equal(look.JSON200.Matches, []string{e.cohost}) {
		t.Fatalf("lookup %s: got %s, want the co-host %s", e.cohost[:strings.Index(e.cohost, "::")+6], look.Body, e.cohost)
	}

	g, err := s.Platform.GenerateExternalPartyTopologyWithResponse(ctx, validator, platformapi.GenerateTopologyRequest{
		PartyHint: "multi", PublicKeyBase64: k.spki, Hosts: &[]platformapi.HostingParticipant{confirm(e.cohost)}, ConfirmationThreshold: ptr(int32(2)),
	})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "generate", g.StatusCode(), g.Body, http.StatusOK)
	top := g.JSON200
	party := top.PartyId
	a, err := s.Platform.AllocateExternalPartyWithResponse(ctx, validator, platformapi.AllocateExternalPartyRequest{
		SynchronizerId: top.SynchronizerId, TopologyTransactions: top.TopologyTransactions, Signature: k.sign(top.MultiHash),
		PublicKeyFingerprint: top.PublicKeyFingerprint,
	})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "allocate", a.StatusCode(), a.Body, http.StatusOK)
	if a.JSON200.Complete || len(a.JSON200.Hosts) != 1 || a.JSON200.Hosts[0] != confirm(e.cohost) {
		t.Fatalf("allocate: got %s, want incomplete with the co-host owing approval", a.Body)
	}

	proposals := func(name string) []platformapi.TopologyProposal {
		t.Helper()
		r, err := s.Platform.ListTopologyProposalsWithResponse(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "proposals of "+name, r.StatusCode(), r.Body, http.StatusOK)
		return *r.JSON200
	}
	local := func(name string) map[string]platformapi.HostedParty {
		t.Helper()
		r, err := s.Platform.ListLocalPartiesWithResponse(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "local parties of "+name, r.StatusCode(), r.Body, http.StatusOK)
		out := map[string]platformapi.HostedParty{}
		for _, p := range *r.JSON200 {
			out[p.PartyId] = p
		}
		return out
	}
	// The co-host must act; the allocating participant has signed already.
	for name, wantAction := range map[string]bool{e.cohostVal: true, validator: false} {
		ps := proposals(name)
		if len(ps) != 1 || ps[0].PartyId != party || ps[0].ActionRequired != wantAction || ps[0].Serial != 1 || ps[0].Threshold != 2 || len(ps[0].Hosts) != 2 {
			t.Fatalf("proposals of %s: got %+v, want the party's serial 1 with actionRequired %v", name, ps, wantAction)
		}
	}
	if _, ok := local(validator)[party]; ok {
		t.Fatal("the party is hosted before the co-host approved")
	}

	ap, err := s.Platform.ApprovePendingHostingWithResponse(ctx, e.cohostVal, platformapi.ApprovePendingHostingRequest{PartyId: party})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "approve", ap.StatusCode(), ap.Body, http.StatusOK)
	if !ap.JSON200.Complete || len(ap.JSON200.Hosts) != 0 || *ap.JSON200.Serial != 1 {
		t.Fatalf("approve: got %s, want complete", ap.Body)
	}
	for _, name := range []string{validator, e.cohostVal} {
		p, ok := local(name)[party]
		if !ok || !p.External || p.Serial != 1 || p.Threshold != 2 || len(p.Hosts) != 2 || len(proposals(name)) != 0 {
			t.Fatalf("%s: got %+v, want the party hosted by both at serial 1 and no proposal left", name, p)
		}
		ext, _ := s.Platform.ListExternalPartiesWithResponse(ctx, name)
		expect(t, "external parties", ext.StatusCode(), ext.Body, http.StatusOK)
		if !slices.ContainsFunc(*ext.JSON200, func(h platformapi.HostedParty) bool { return h.PartyId == party }) {
			t.Fatalf("external parties of %s: got %s, want %s", name, ext.Body, party)
		}
	}
	// The validator's own party is local, not external.
	for id, p := range local(validator) {
		if strings.HasPrefix(id, validator+"-validator-1::") && (p.External || p.Hosts[0].Permission != platformapi.HostedPermissionSubmitting) {
			t.Fatalf("operator party: got %+v, want a participant-managed party with SUBMITTING", p)
		}
	}

	amend := func(hosts []platformapi.HostingParticipant, threshold int32, wantSerial int64) (platformapi.PreparedHostingChange, platformapi.SubmitAmendHostingRequest) {
		t.Helper()
		pr, err := s.Platform.PrepareAmendHostingWithResponse(ctx, validator, platformapi.PrepareAmendHostingRequest{PartyId: party, Hosts: hosts, ConfirmationThreshold: &threshold})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "prepare", pr.StatusCode(), pr.Body, http.StatusOK)
		got := *pr.JSON200
		hash, _ := hex.DecodeString(got.TransactionHash)
		if got.CurrentSerial != wantSerial-1 || got.NextSerial != wantSerial || !bytes.Equal(hash, cantonHash(11, got.Transaction)) {
			t.Fatalf("prepare: got serials %d→%d, hash %s; want %d→%d and Canton's hash of the transaction", got.CurrentSerial, got.NextSerial, got.TransactionHash, wantSerial-1, wantSerial)
		}
		return got, platformapi.SubmitAmendHostingRequest{PartyId: party, Transaction: got.Transaction, Signature: k.sign(hash), PublicKeyFingerprint: top.PublicKeyFingerprint}
	}
	submit := func(req platformapi.SubmitAmendHostingRequest) *platformapi.SubmitAmendHostingResponse {
		t.Helper()
		r, err := s.Platform.SubmitAmendHostingWithResponse(ctx, validator, req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Drop the co-host: only the party signs.
	_, drop := amend([]platformapi.HostingParticipant{confirm(e.self)}, 1, 2)
	bad := drop
	bad.Signature = k.sign([]byte("something else"))
	r := submit(bad)
	expect(t, "submit with a signature over something else", r.StatusCode(), r.Body, http.StatusUnprocessableEntity)
	if msg := platformError(t, r.Body); !strings.Contains(msg["error"].(string), "does not verify") || !strings.HasPrefix(msg["endpoint"].(string), "grpc://127.0.0.1:") {
		t.Fatalf("422: got %s", r.Body)
	}
	r = submit(drop)
	expect(t, "submit", r.StatusCode(), r.Body, http.StatusOK)
	if !r.JSON200.Complete || *r.JSON200.Serial != 2 {
		t.Fatalf("submit: got %s, want complete at serial 2", r.Body)
	}
	if p := local(validator)[party]; p.Serial != 2 || len(p.Hosts) != 1 || p.Threshold != 1 {
		t.Fatalf("after dropping the co-host: got %+v", p)
	}
	if _, ok := local(e.cohostVal)[party]; ok {
		t.Fatal("the dropped co-host still hosts the party")
	}
	// The same change again: its serial is no longer the next one.
	r = submit(drop)
	expect(t, "submit again", r.StatusCode(), r.Body, http.StatusConflict)

	// Add the co-host back: it must approve again.
	_, add := amend([]platformapi.HostingParticipant{confirm(e.self), confirm(e.cohost)}, 2, 3)
	r = submit(add)
	expect(t, "submit adding the co-host", r.StatusCode(), r.Body, http.StatusOK)
	if r.JSON200.Complete || len(r.JSON200.Hosts) != 1 || r.JSON200.Hosts[0] != confirm(e.cohost) {
		t.Fatalf("submit: got %s, want incomplete with the co-host owing approval", r.Body)
	}
	if ps := proposals(e.cohostVal); len(ps) != 1 || !ps[0].ActionRequired || ps[0].Serial != 3 {
		t.Fatalf("co-host proposals: got %+v", ps)
	}
	ap, _ = s.Platform.ApprovePendingHostingWithResponse(ctx, e.cohostVal, platformapi.ApprovePendingHostingRequest{PartyId: party})
	expect(t, "approve again", ap.StatusCode(), ap.Body, http.StatusOK)
	if p := local(e.cohostVal)[party]; !ap.JSON200.Complete || p.Serial != 3 || len(p.Hosts) != 2 {
		t.Fatalf("after the co-host approved again: %s, %+v", ap.Body, p)
	}

	// Every mutating call is audited, none with key material.
	entries, err := s.App.Store.FindAudit(ctx, domain.AuditFilter{Page: domain.Page{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[int]bool{}
	for _, en := range entries {
		if seen[en.Operation] == nil {
			seen[en.Operation] = map[int]bool{}
		}
		seen[en.Operation][en.Status] = true
	}
	for op, statuses := range map[string][]int{"approvePendingHosting": {200}, "prepareAmendHosting": {200}, "submitAmendHosting": {200, 409, 422}} {
		for _, st := range statuses {
			if !seen[op][st] {
				t.Errorf("%s: no audit entry with status %d (got %v)", op, st, seen[op])
			}
		}
	}
	if logs := s.Logs(); strings.Contains(logs, hex.EncodeToString(drop.Signature)) || strings.Contains(logs, top.PublicKeyFingerprint+"\",\"signature") {
		t.Error("a signature is in the log")
	}
}

// TestAdminOperations: each admin API operation's answers other than the
// flow's: the participant's own views, 400s, 404s and 502s.
func TestAdminOperations(t *testing.T) {
	t.Parallel()
	e := startHosting(t)
	s, ctx := e.s, t.Context()

	t.Run("participant status", func(t *testing.T) {
		r, err := s.Platform.GetParticipantStatusWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "status", r.StatusCode(), r.Body, http.StatusOK)
		st := *r.JSON200.Status
		common, _ := st["commonStatus"].(map[string]any)
		syncs, _ := st["connectedSynchronizers"].([]any)
		if common["uid"] != e.self || common["active"] != true || len(syncs) != 1 || syncs[0].(map[string]any)["health"] != "HEALTH_HEALTHY" {
			t.Fatalf("status: got %s", r.Body)
		}
	})
	t.Run("keys", func(t *testing.T) {
		r, err := s.Platform.GetValidatorKeysWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "keys", r.StatusCode(), r.Body, http.StatusOK)
		purposes := map[platformapi.VaultKeyPurpose]int{}
		namespaceKey := false
		for _, k := range *r.JSON200 {
			purposes[k.Purpose]++
			if k.PublicKey == nil || len(*k.PublicKey) == 0 || !strings.HasPrefix(k.Fingerprint, "1220") {
				t.Fatalf("key %+v: want public material and a fingerprint", k)
			}
			// The namespace key's fingerprint is the participant's namespace.
			namespaceKey = namespaceKey || k.Usage != nil && slices.Contains(*k.Usage, "SIGNING_KEY_USAGE_NAMESPACE") && strings.HasSuffix(e.self, "::"+k.Fingerprint)
		}
		if purposes[platformapi.VaultKeyPurposeSigning] != 2 || purposes[platformapi.VaultKeyPurposeEncryption] != 1 || !namespaceKey {
			t.Fatalf("keys: got %s", r.Body)
		}
	})
	t.Run("lookup", func(t *testing.T) {
		for prefix, want := range map[string][]string{e.cohost: {e.cohost}, "participant-": {e.self, e.cohost}, "participant-gone::": {}} {
			r, err := s.Platform.LookupParticipantWithResponse(ctx, validator, &platformapi.LookupParticipantParams{ParticipantUid: prefix})
			if err != nil {
				t.Fatal(err)
			}
			expect(t, "lookup", r.StatusCode(), r.Body, http.StatusOK)
			got := slices.Sorted(slices.Values(r.JSON200.Matches))
			if !slices.Equal(got, slices.Sorted(slices.Values(want))) || r.JSON200.Found != (len(want) > 0) || r.JSON200.ParticipantUid != prefix {
				t.Fatalf("lookup %q: got %s, want %v", prefix, r.Body, want)
			}
		}
	})

	type call func() (int, []byte)
	raw := func(path, body string) call {
		return func() (int, []byte) {
			r, err := s.Platform.ApprovePendingHostingWithBodyWithResponse(ctx, validator, "application/json", strings.NewReader(body))
			if path == "prepare" {
				pr, perr := s.Platform.PrepareAmendHostingWithBodyWithResponse(ctx, validator, "application/json", strings.NewReader(body))
				if perr != nil {
					t.Fatal(perr)
				}
				return pr.StatusCode(), pr.Body
			}
			if err != nil {
				t.Fatal(err)
			}
			return r.StatusCode(), r.Body
		}
	}
	confirm := func(uid string) platformapi.HostingParticipant {
		return platformapi.HostingParticipant{ParticipantUid: uid, Permission: platformapi.HostingPermissionConfirming}
	}
	prepare := func(name string, req platformapi.PrepareAmendHostingRequest) call {
		return func() (int, []byte) {
			r, err := s.Platform.PrepareAmendHostingWithResponse(ctx, name, req)
			if err != nil {
				t.Fatal(err)
			}
			return r.StatusCode(), r.Body
		}
	}
	tests := []struct {
		name   string
		call   call
		status int
		want   string
	}{
		{"approve without partyId", raw("approve", `{}`), http.StatusBadRequest, "partyId"},
		{"approve without a proposal", func() (int, []byte) {
			r, _ := s.Platform.ApprovePendingHostingWithResponse(ctx, validator, platformapi.ApprovePendingHostingRequest{PartyId: e.unknownParty})
			return r.StatusCode(), r.Body
		}, http.StatusNotFound, "no pending hosting proposal for party " + e.unknownParty},
		{"prepare without hosts", raw("prepare", `{"partyId":"p::1220","hosts":[]}`), http.StatusBadRequest, "hosts"},
		{"prepare, threshold above the confirming hosts", prepare(validator, platformapi.PrepareAmendHostingRequest{PartyId: e.unknownParty,
			Hosts: []platformapi.HostingParticipant{confirm(e.self), {ParticipantUid: e.cohost, Permission: platformapi.HostingPermissionObserving}}, ConfirmationThreshold: ptr(int32(2))}),
			http.StatusBadRequest, "confirmationThreshold: 2 exceeds the number of confirming hosts, 1"},
		{"prepare, only observers", prepare(validator, platformapi.PrepareAmendHostingRequest{PartyId: e.unknownParty,
			Hosts: []platformapi.HostingParticipant{{ParticipantUid: e.self, Permission: platformapi.HostingPermissionObserving}}}),
			http.StatusBadRequest, "at least one host must confirm"},
		{"prepare, a host twice", prepare(validator, platformapi.PrepareAmendHostingRequest{PartyId: e.unknownParty,
			Hosts: []platformapi.HostingParticipant{confirm(e.self), confirm(e.self)}}), http.StatusBadRequest, "hosts.1.participantUid"},
		{"prepare for a party without hosting", prepare(validator, platformapi.PrepareAmendHostingRequest{PartyId: e.unknownParty,
			Hosts: []platformapi.HostingParticipant{confirm(e.self)}}), http.StatusNotFound, "has no hosting on the synchronizer"},
		{"prepare on an unknown validator", prepare("validator-9", platformapi.PrepareAmendHostingRequest{PartyId: e.unknownParty,
			Hosts: []platformapi.HostingParticipant{confirm(e.self)}}), http.StatusNotFound, `validator "validator-9" not found`},
		{"submit something that is not a transaction", func() (int, []byte) {
			r, _ := s.Platform.SubmitAmendHostingWithResponse(ctx, validator, platformapi.SubmitAmendHostingRequest{PartyId: e.unknownParty, Transaction: []byte("tx"), Signature: []byte("s"), PublicKeyFingerprint: "1220ab"})
			return r.StatusCode(), r.Body
		}, http.StatusBadRequest, "transaction: is not a party-to-participant topology transaction"},
		{"lookup without participantUid", func() (int, []byte) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/validators/"+validator+"/participant-lookup", nil)
			req.Header.Set("Authorization", "Bearer "+s.Token)
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b := new(bytes.Buffer)
			_, _ = b.ReadFrom(resp.Body)
			return resp.StatusCode, b.Bytes()
		}, http.StatusBadRequest, "participantUid"},
		{"keys of an unknown validator", func() (int, []byte) {
			r, _ := s.Platform.GetValidatorKeysWithResponse(ctx, "validator-9")
			return r.StatusCode(), r.Body
		}, http.StatusNotFound, `validator "validator-9" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := tt.call()
			expect(t, tt.name, status, body, tt.status)
			if msg, _ := platformError(t, body)["error"].(string); !strings.Contains(msg, tt.want) {
				t.Fatalf("error: got %q, want it to contain %q", msg, tt.want)
			}
		})
	}

	gets := map[string]call{
		"getParticipantStatus": func() (int, []byte) {
			r, _ := s.Platform.GetParticipantStatusWithResponse(ctx, validator)
			return r.StatusCode(), r.Body
		},
		"getValidatorKeys": func() (int, []byte) {
			r, _ := s.Platform.GetValidatorKeysWithResponse(ctx, validator)
			return r.StatusCode(), r.Body
		},
		"listLocalParties": func() (int, []byte) {
			r, _ := s.Platform.ListLocalPartiesWithResponse(ctx, validator)
			return r.StatusCode(), r.Body
		},
		"listExternalParties": func() (int, []byte) {
			r, _ := s.Platform.ListExternalPartiesWithResponse(ctx, validator)
			return r.StatusCode(), r.Body
		},
		"listTopologyProposals": func() (int, []byte) {
			r, _ := s.Platform.ListTopologyProposalsWithResponse(ctx, validator)
			return r.StatusCode(), r.Body
		},
		"lookupParticipant": func() (int, []byte) {
			r, _ := s.Platform.LookupParticipantWithResponse(ctx, validator, &platformapi.LookupParticipantParams{ParticipantUid: "participant-"})
			return r.StatusCode(), r.Body
		},
		"approvePendingHosting": func() (int, []byte) {
			r, _ := s.Platform.ApprovePendingHostingWithResponse(ctx, validator, platformapi.ApprovePendingHostingRequest{PartyId: e.unknownParty})
			return r.StatusCode(), r.Body
		},
		"prepareAmendHosting": prepare(validator, platformapi.PrepareAmendHostingRequest{PartyId: e.unknownParty, Hosts: []platformapi.HostingParticipant{confirm(e.self)}}),
	}
	for _, fault := range []upstreamFault{adminUnavailable, adminTooSlow(3 * time.Second)} {
		t.Run("502 "+fault.name, func(t *testing.T) {
			e.faults.set(fault.fault)
			defer e.faults.set(nil)
			for op, c := range gets {
				status, body := c()
				expect(t, op, status, body, http.StatusBadGateway)
				msg := platformError(t, body)
				if ep, _ := msg["endpoint"].(string); !strings.HasPrefix(ep, "grpc://127.0.0.1:") || !strings.Contains(ep, "/com.digitalasset.canton.") {
					t.Fatalf("%s endpoint: got %q", op, ep)
				}
				if m, _ := msg["error"].(string); !strings.Contains(m, fault.want) {
					t.Fatalf("%s error: got %q, want it to contain %q", op, m, fault.want)
				}
			}
		})
	}
}
