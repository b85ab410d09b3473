package platform

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	cryptov30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/crypto/v30"
	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
	topologyadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/topology/admin/v30"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/topology"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// Party hosting on the synchronizer, through the participant admin API's
// topology services: the parties this participant hosts, the proposals it
// is named in, its approval of them, and hosting changes the party signs.

// ListLocalParties lists the effective mappings that name this participant.
func (s *Server) ListLocalParties(ctx context.Context, req platformapi.ListLocalPartiesRequestObject) (platformapi.ListLocalPartiesResponseObject, error) {
	parties, err := s.hostedParties(ctx, "listLocalParties", req.Name, false)
	if err != nil {
		return nil, err
	}
	return platformapi.ListLocalParties200JSONResponse(parties), nil
}

// ListExternalParties lists the hosted parties that are externally signed.
func (s *Server) ListExternalParties(ctx context.Context, req platformapi.ListExternalPartiesRequestObject) (platformapi.ListExternalPartiesResponseObject, error) {
	parties, err := s.hostedParties(ctx, "listExternalParties", req.Name, true)
	if err != nil {
		return nil, err
	}
	return platformapi.ListExternalParties200JSONResponse(parties), nil
}

func (s *Server) hostedParties(ctx context.Context, operation, validator string, externalOnly bool) ([]platformapi.HostedParty, error) {
	a, p, err := s.identified(ctx, operation, validator)
	if err != nil {
		return nil, err
	}
	results, err := p.partyToParticipant(ctx, a, false, "", p.uid)
	if err != nil {
		return nil, err
	}
	out := []platformapi.HostedParty{}
	for _, r := range results {
		m := r.GetItem()
		if !hosts(m, p.uid) || externalOnly && !external(m) {
			continue
		}
		out = append(out, platformapi.HostedParty{
			PartyId: m.GetParty(), Threshold: int32(m.GetThreshold()), Hosts: partyHosts(m),
			Serial: int64(r.GetContext().GetSerial()), External: external(m),
		})
	}
	slices.SortStableFunc(out, func(a, b platformapi.HostedParty) int { return strings.Compare(a.PartyId, b.PartyId) })
	return out, nil
}

// hosts tells whether uid is among m's hosts (the filter of the topology read is a substring).
func hosts(m *protocolv30.PartyToParticipant, uid string) bool {
	return slices.ContainsFunc(m.GetParticipants(), func(h *protocolv30.PartyToParticipant_HostingParticipant) bool { return h.GetParticipantUid() == uid })
}

// ListTopologyProposals lists the pending mappings that name this participant.
func (s *Server) ListTopologyProposals(ctx context.Context, req platformapi.ListTopologyProposalsRequestObject) (platformapi.ListTopologyProposalsResponseObject, error) {
	a, p, err := s.identified(ctx, "listTopologyProposals", req.Name)
	if err != nil {
		return nil, err
	}
	results, err := p.partyToParticipant(ctx, a, true, "", p.uid)
	if err != nil {
		return nil, err
	}
	out := platformapi.ListTopologyProposals200JSONResponse{}
	for _, r := range results {
		m := r.GetItem()
		if !hosts(m, p.uid) {
			continue
		}
		signedBy := append([]string{}, r.GetContext().GetSignedByFingerprints()...)
		out = append(out, platformapi.TopologyProposal{
			PartyId: m.GetParty(), Threshold: int32(m.GetThreshold()), Hosts: partyHosts(m), Serial: int64(r.GetContext().GetSerial()),
			TransactionHash: hex.EncodeToString(r.GetContext().GetTransactionHash()), SignedBy: signedBy,
			ActionRequired: !slices.Contains(signedBy, namespace(p.uid)),
		})
	}
	slices.SortStableFunc(out, func(a, b platformapi.TopologyProposal) int {
		return cmp.Or(strings.Compare(a.PartyId, b.PartyId), cmp.Compare(a.Serial, b.Serial))
	})
	return out, nil
}

// ApprovePendingHosting authorizes, by its hash, the pending proposal for
// the party that names this participant (Authorize), then reads back what
// is still missing.
func (s *Server) ApprovePendingHosting(ctx context.Context, req platformapi.ApprovePendingHostingRequestObject) (platformapi.ApprovePendingHostingResponseObject, error) {
	party := req.Body.PartyId
	a, p, err := s.identified(ctx, "approvePendingHosting", req.Name)
	if err != nil {
		return nil, err
	}
	results, err := p.partyToParticipant(ctx, a, true, party, p.uid)
	if err != nil {
		return nil, err
	}
	var pending *topologyadminv30.ListPartyToParticipantResponse_Result
	for _, r := range results {
		if r.GetItem().GetParty() == party && hosts(r.GetItem(), p.uid) {
			pending = r
		}
	}
	if pending == nil {
		return nil, domain.NotFound("no pending hosting proposal for party %s names this validator's participant %s", party, p.uid)
	}
	res, err := a.TopologyWrite.Authorize(ctx, &topologyadminv30.AuthorizeRequest{
		Type:  &topologyadminv30.AuthorizeRequest_TransactionHash{TransactionHash: hex.EncodeToString(pending.GetContext().GetTransactionHash())},
		Store: p.store,
	})
	if err != nil {
		return nil, err
	}
	serial := int64(pending.GetContext().GetSerial())
	out := platformapi.ApprovePendingHosting200JSONResponse{PartyId: party, Serial: &serial, Hosts: []platformapi.HostingParticipant{}, Complete: !res.GetTransaction().GetProposal()}
	if !out.Complete {
		var signedBy []string
		for _, sig := range res.GetTransaction().GetSignatures() {
			signedBy = append(signedBy, sig.GetSignedBy())
		}
		if out.Hosts, err = owing(ctx, a, p, pending.GetItem(), signedBy); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PrepareAmendHosting reads the party's current mapping and has the
// participant generate its replacement with the next serial, the party's
// signing keys kept; the party signs the transaction's hash.
func (s *Server) PrepareAmendHosting(ctx context.Context, req platformapi.PrepareAmendHostingRequestObject) (platformapi.PrepareAmendHostingResponseObject, error) {
	b := req.Body
	if len(b.Hosts) == 0 {
		return nil, domain.Invalid("hosts", "at least one participant must keep hosting the party")
	}
	confirming := 0
	seen := map[string]bool{}
	var participants []*protocolv30.PartyToParticipant_HostingParticipant
	for i, h := range b.Hosts {
		if seen[h.ParticipantUid] {
			return nil, domain.Invalid(fmt.Sprintf("hosts.%d.participantUid", i), "participant %s is named more than once", h.ParticipantUid)
		}
		seen[h.ParticipantUid] = true
		perm := protocolv30.Enums_PARTICIPANT_PERMISSION_OBSERVATION
		if h.Permission == platformapi.HostingPermissionConfirming {
			perm, confirming = protocolv30.Enums_PARTICIPANT_PERMISSION_CONFIRMATION, confirming+1
		}
		participants = append(participants, &protocolv30.PartyToParticipant_HostingParticipant{ParticipantUid: h.ParticipantUid, Permission: perm})
	}
	if b.ConfirmationThreshold != nil && int(*b.ConfirmationThreshold) > confirming {
		return nil, domain.Invalid("confirmationThreshold", "%d exceeds the number of confirming hosts, %d", *b.ConfirmationThreshold, confirming)
	}
	if confirming == 0 {
		return nil, domain.Invalid("hosts", "at least one host must confirm for the party")
	}
	a, p, err := s.identified(ctx, "prepareAmendHosting", req.Name)
	if err != nil {
		return nil, err
	}
	current, err := currentMapping(ctx, a, p, b.PartyId)
	if err != nil {
		return nil, err
	}
	threshold := current.GetItem().GetThreshold()
	if b.ConfirmationThreshold != nil {
		threshold = uint32(*b.ConfirmationThreshold)
	}
	if int(threshold) > confirming {
		return nil, domain.Invalid("confirmationThreshold", "the current threshold %d exceeds the number of confirming hosts, %d: give a confirmationThreshold", threshold, confirming)
	}
	currentSerial := current.GetContext().GetSerial()
	mapping := &protocolv30.PartyToParticipant{Party: b.PartyId, Threshold: threshold, Participants: participants, PartySigningKeys: current.GetItem().GetPartySigningKeys()}
	gen, err := a.TopologyWrite.GenerateTransactions(ctx, &topologyadminv30.GenerateTransactionsRequest{Proposals: []*topologyadminv30.GenerateTransactionsRequest_Proposal{{
		Operation: protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE, Serial: uint32(currentSerial) + 1,
		Mapping: &protocolv30.TopologyMapping{Mapping: &protocolv30.TopologyMapping_PartyToParticipant{PartyToParticipant: mapping}}, Store: p.store,
	}}})
	if err != nil {
		return nil, err
	}
	if len(gen.GetGeneratedTransactions()) != 1 {
		return nil, &domain.UpstreamError{Endpoint: upstream.AdminCall{Address: a.Address, Method: topologyadminv30.TopologyManagerWriteService_GenerateTransactions_FullMethodName}.Endpoint(),
			Message: fmt.Sprintf("the participant generated %d transactions for one proposal", len(gen.GetGeneratedTransactions()))}
	}
	tx := gen.GetGeneratedTransactions()[0]
	return platformapi.PrepareAmendHosting200JSONResponse{
		PartyId: b.PartyId, CurrentSerial: int64(currentSerial), NextSerial: int64(currentSerial) + 1,
		Transaction: tx.GetSerializedTransaction(), TransactionHash: hex.EncodeToString(tx.GetTransactionHash()),
	}, nil
}

// currentMapping is the party's effective mapping on the synchronizer; 404 when it has none.
func currentMapping(ctx context.Context, a *upstream.AdminAPI, p participant, party string) (*topologyadminv30.ListPartyToParticipantResponse_Result, error) {
	results, err := p.partyToParticipant(ctx, a, false, party, "")
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		if r.GetItem().GetParty() == party {
			return r, nil
		}
	}
	return nil, domain.NotFound("party %s has no hosting on the synchronizer", party)
}

// signatureSpecs are the admin API's values of the contract's signature fields.
var (
	signatureFormats = map[platformapi.SignatureFormat]cryptov30.SignatureFormat{
		platformapi.SignatureFormatConcat: cryptov30.SignatureFormat_SIGNATURE_FORMAT_CONCAT,
		platformapi.SignatureFormatDer:    cryptov30.SignatureFormat_SIGNATURE_FORMAT_DER,
		platformapi.SignatureFormatRaw:    cryptov30.SignatureFormat_SIGNATURE_FORMAT_RAW,
	}
	signingAlgorithms = map[platformapi.SigningAlgorithmSpec]cryptov30.SigningAlgorithmSpec{
		platformapi.SigningAlgorithmEd25519:     cryptov30.SigningAlgorithmSpec_SIGNING_ALGORITHM_SPEC_ED25519,
		platformapi.SigningAlgorithmEcDsaSha256: cryptov30.SigningAlgorithmSpec_SIGNING_ALGORITHM_SPEC_EC_DSA_SHA_256,
		platformapi.SigningAlgorithmEcDsaSha384: cryptov30.SigningAlgorithmSpec_SIGNING_ALGORITHM_SPEC_EC_DSA_SHA_384,
	}
)

// signatureChoice is the signature format and algorithm of a request, with
// their defaults, refusing the pairs that cannot be right for any key; which
// key signed is the ledger's to check.
func signatureChoice(f *platformapi.SignatureFormat, a *platformapi.SigningAlgorithmSpec) (platformapi.SignatureFormat, platformapi.SigningAlgorithmSpec, error) {
	format, algorithm := ptr.Deref(f, platformapi.SignatureFormatConcat), ptr.Deref(a, platformapi.SigningAlgorithmEd25519)
	if algorithm == platformapi.SigningAlgorithmEd25519 && format == platformapi.SignatureFormatDer ||
		algorithm != platformapi.SigningAlgorithmEd25519 && format == platformapi.SignatureFormatConcat {
		return "", "", domain.Invalid("signatureFormat", "%s does not go with %s: Ed25519 signs in SIGNATURE_FORMAT_CONCAT, ECDSA in SIGNATURE_FORMAT_DER", format, algorithm)
	}
	return format, algorithm, nil
}

// SubmitAmendHosting adds the prepared transaction with the party's
// signature; the participant checks the signature and the serial. An
// unknown validator answers 404 before the body is looked at.
func (s *Server) SubmitAmendHosting(ctx context.Context, req platformapi.SubmitAmendHostingRequestObject) (platformapi.SubmitAmendHostingResponseObject, error) {
	a, err := s.admin(ctx, "submitAmendHosting", req.Name)
	if err != nil {
		return nil, err
	}
	b := req.Body
	format, algorithm, err := signatureChoice(b.SignatureFormat, b.SigningAlgorithmSpec)
	if err != nil {
		return nil, err
	}
	tx, err := topology.Unmarshal(b.Transaction)
	ptp := tx.GetMapping().GetPartyToParticipant()
	if err != nil || ptp == nil {
		return nil, domain.Invalid("transaction", "is not a party-to-participant topology transaction: send the transaction of prepare unchanged")
	}
	if ptp.GetParty() != b.PartyId {
		return nil, domain.Invalid("transaction", "maps party %s, not %s", ptp.GetParty(), b.PartyId)
	}
	p, err := identify(ctx, a)
	if err != nil {
		return nil, err
	}
	_, err = a.TopologyWrite.AddTransactions(ctx, &topologyadminv30.AddTransactionsRequest{
		Transactions: []*protocolv30.SignedTopologyTransaction{{
			Transaction: b.Transaction, Proposal: true,
			Signatures: []*cryptov30.Signature{{Format: signatureFormats[format], Signature: b.Signature, SignedBy: b.PublicKeyFingerprint, SigningAlgorithmSpec: signingAlgorithms[algorithm]}},
		}},
		Store: p.store,
	})
	if err != nil {
		return nil, err
	}
	serial := int64(tx.GetSerial())
	out := platformapi.SubmitAmendHosting200JSONResponse{PartyId: b.PartyId, Serial: &serial, Hosts: []platformapi.HostingParticipant{}, Complete: true}
	// Still a proposal: the hosts that have not signed it owe approval.
	proposals, err := p.partyToParticipant(ctx, a, true, b.PartyId, "")
	if err != nil {
		return nil, err
	}
	for _, r := range proposals {
		if r.GetItem().GetParty() == b.PartyId && int64(r.GetContext().GetSerial()) == serial {
			out.Complete = false
			if out.Hosts, err = owing(ctx, a, p, r.GetItem(), r.GetContext().GetSignedByFingerprints()); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
