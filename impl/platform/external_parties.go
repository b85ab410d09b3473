package platform

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/topology"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// keySpecs are the ledger's names of the contract's key specs.
var keySpecs = map[platformapi.KeySpec]string{
	platformapi.KeySpecEd25519:     topology.SpecEd25519,
	platformapi.KeySpecEcP256:      topology.SpecP256,
	platformapi.KeySpecEcP384:      topology.SpecP384,
	platformapi.KeySpecEcSecp256k1: topology.SpecSecp256k1,
}

// GenerateExternalPartyTopology checks the request, then proxies
// generate-topology for the ledger's synchronizer; no host may be the
// ledger's own participant.
func (s *Server) GenerateExternalPartyTopology(ctx context.Context, req platformapi.GenerateExternalPartyTopologyRequestObject) (platformapi.GenerateExternalPartyTopologyResponseObject, error) {
	n, err := s.node(ctx, "generateExternalPartyTopology", req.Name)
	if err != nil {
		return nil, err
	}
	b := req.Body
	spec := ptr.Deref(b.KeySpec, platformapi.KeySpecEd25519)
	if _, err := topology.ParseKey(b.PublicKeyBase64, keySpecs[spec]); err != nil {
		return nil, domain.Invalid("publicKeyBase64", "must be the Base64 of a DER X.509 SubjectPublicKeyInfo of a key of keySpec %s: %v", spec, err)
	}
	hosts := ptr.Deref(b.Hosts, nil)
	uids := make([]string, 0, len(hosts))
	var others, observers []string
	for i, h := range hosts {
		if slices.Contains(uids, h.ParticipantUid) {
			return nil, domain.Invalid(fmt.Sprintf("hosts.%d.participantUid", i), "participant %s is named more than once", h.ParticipantUid)
		}
		uids = append(uids, h.ParticipantUid)
		if h.Permission == platformapi.HostingPermissionConfirming {
			others = append(others, h.ParticipantUid)
		} else {
			observers = append(observers, h.ParticipantUid)
		}
	}
	confirming := len(others)
	if !ptr.Deref(b.LocalParticipantObservationOnly, false) {
		confirming++
	}
	threshold := ptr.Deref(b.ConfirmationThreshold, 1)
	if int(threshold) > confirming {
		return nil, domain.Invalid("confirmationThreshold", "%d exceeds the number of confirming participants, %d (this participant confirms unless localParticipantObservationOnly, and each host with permission CONFIRMING)", threshold, confirming)
	}
	self, err := participantID(ctx, n)
	if err != nil {
		return nil, err
	}
	for i, h := range hosts {
		if h.ParticipantUid == self {
			return nil, domain.Invalid(fmt.Sprintf("hosts.%d.participantUid", i), "%s is this validator's participant, which hosts the party anyway: name only other participants", self)
		}
	}
	sync, err := connectedSynchronizer(ctx, n)
	if err != nil {
		return nil, err
	}
	up := ledgerapi.GenerateExternalPartyTopologyRequest{
		Synchronizer: sync,
		PartyHint:    b.PartyHint,
		PublicKey: ledgerapi.SigningPublicKey{
			Format: topology.KeyFormatSPKI, KeyData: base64.StdEncoding.EncodeToString(b.PublicKeyBase64), KeySpec: keySpecs[spec],
		},
		LocalParticipantObservationOnly: b.LocalParticipantObservationOnly,
		ConfirmationThreshold:           &threshold,
	}
	if len(others) > 0 {
		up.OtherConfirmingParticipantUids = &others
	}
	if len(observers) > 0 {
		up.ObservingParticipantUids = &observers
	}
	resp, err := n.Ledger.PostV2PartiesExternalGenerateTopologyWithResponse(ctx, up)
	got, err := relay[ledgerapi.GenerateExternalPartyTopologyResponse](n, upstream.Ledger, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body })
	if err != nil {
		return nil, err
	}
	endpoint := resp.HTTPResponse.Request.URL.String()
	out := platformapi.GenerateExternalPartyTopology200JSONResponse{
		PartyId: got.PartyId, PublicKeyFingerprint: got.PublicKeyFingerprint, SynchronizerId: sync, OtherHostingParticipantUids: uids,
	}
	if out.MultiHash, err = base64.StdEncoding.DecodeString(got.MultiHash); err != nil || len(out.MultiHash) == 0 {
		return nil, unexpectedAnswer(endpoint, "a multi-hash that is not Base64")
	}
	for _, tx := range got.TopologyTransactions {
		raw, err := base64.StdEncoding.DecodeString(tx)
		if err != nil {
			return nil, unexpectedAnswer(endpoint, "a topology transaction that is not Base64")
		}
		out.TopologyTransactions = append(out.TopologyTransactions, raw)
	}
	if len(out.TopologyTransactions) == 0 {
		return nil, unexpectedAnswer(endpoint, "no topology transactions")
	}
	return out, nil
}

// AllocateExternalParty proxies allocate with the party's signature over
// the multi-hash. The ledger answers only the party id: the hosts other than
// this participant, which owe approval, come from the transactions.
func (s *Server) AllocateExternalParty(ctx context.Context, req platformapi.AllocateExternalPartyRequestObject) (platformapi.AllocateExternalPartyResponseObject, error) {
	n, err := s.node(ctx, "allocateExternalParty", req.Name)
	if err != nil {
		return nil, err
	}
	b := req.Body
	format, algorithm, err := signatureChoice(b.SignatureFormat, b.SigningAlgorithmSpec)
	if err != nil {
		return nil, err
	}
	var hosting *protocolv30.PartyToParticipant
	var serial int64
	txs := make([]ledgerapi.SignedTransaction, len(b.TopologyTransactions))
	for i, raw := range b.TopologyTransactions {
		tx, err := topology.Unmarshal(raw)
		if err != nil {
			return nil, domain.Invalid(fmt.Sprintf("topologyTransactions.%d", i), "is not a Canton topology transaction (%v): send the topologyTransactions of generate-topology unchanged", err)
		}
		if ptp := tx.GetMapping().GetPartyToParticipant(); ptp != nil && hosting == nil {
			hosting, serial = ptp, int64(tx.GetSerial())
		}
		txs[i] = ledgerapi.SignedTransaction{Transaction: base64.StdEncoding.EncodeToString(raw)}
	}
	if hosting == nil {
		return nil, domain.Invalid("topologyTransactions", "no transaction maps the party to its participants (PartyToParticipant): send the topologyTransactions of generate-topology unchanged")
	}
	self, err := participantID(ctx, n)
	if err != nil {
		return nil, err
	}
	sigs := []ledgerapi.Signature{{
		Format: string(format), Signature: base64.StdEncoding.EncodeToString(b.Signature),
		SignedBy: b.PublicKeyFingerprint, SigningAlgorithmSpec: string(algorithm),
	}}
	resp, err := n.Ledger.PostV2PartiesExternalAllocateWithResponse(ctx, ledgerapi.AllocateExternalPartyRequest{
		Synchronizer: b.SynchronizerId, OnboardingTransactions: txs, MultiHashSignatures: &sigs,
	})
	got, err := relay[ledgerapi.AllocateExternalPartyResponse](n, upstream.Ledger, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body })
	if err != nil {
		return nil, err
	}
	out := platformapi.AllocateExternalParty200JSONResponse{PartyId: got.PartyId, Hosts: []platformapi.HostingParticipant{}, Serial: &serial}
	for _, h := range hosting.GetParticipants() {
		if h.GetParticipantUid() == self {
			continue
		}
		// An external party's hosts confirm or observe; submission includes confirmation.
		perm := platformapi.HostingPermissionConfirming
		if h.GetPermission() == protocolv30.Enums_PARTICIPANT_PERMISSION_OBSERVATION {
			perm = platformapi.HostingPermissionObserving
		}
		out.Hosts = append(out.Hosts, platformapi.HostingParticipant{ParticipantUid: h.GetParticipantUid(), Permission: perm})
	}
	out.Complete = len(out.Hosts) == 0
	return out, nil
}
