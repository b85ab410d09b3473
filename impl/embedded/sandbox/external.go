package sandbox

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/topology"
)

// External parties: generate-topology builds the transactions Canton builds,
// in its wire format; allocate decodes them back and checks the party's signature.

// Canton's error codes where known (TopologyManagerError), the sandbox's otherwise.
const (
	codeInvalidSignature = "INVALID_TOPOLOGY_TX_SIGNATURE_ERROR"
	codeUnknownMembers   = "UNKNOWN_MEMBERS"
	codeMultiHashUsed    = "MULTI_HASH_ALREADY_USED" // the sandbox's
)

// decodeOnSynchronizer decodes req and checks its synchronizer, a field of req.
func (n *Network) decodeOnSynchronizer(w http.ResponseWriter, r *http.Request, req any, synchronizer *string) bool {
	if !decode(w, r, req) {
		return false
	}
	if *synchronizer != n.st.SynchronizerID {
		return badRequest(w, "this participant is not connected to synchronizer %q", *synchronizer)
	}
	return true
}

func (n *Network) generateTopology(w http.ResponseWriter, r *http.Request, name string, ns *nodeState) bool {
	var req struct {
		Synchronizer                    string                     `json:"synchronizer"`
		PartyHint                       string                     `json:"partyHint"`
		PublicKey                       ledgerapi.SigningPublicKey `json:"publicKey"`
		LocalParticipantObservationOnly bool                       `json:"localParticipantObservationOnly"`
		OtherConfirmingParticipantUids  []string                   `json:"otherConfirmingParticipantUids"`
		ConfirmationThreshold           uint32                     `json:"confirmationThreshold"`
		ObservingParticipantUids        []string                   `json:"observingParticipantUids"`
	}
	if !n.decodeOnSynchronizer(w, r, &req, &req.Synchronizer) {
		return false
	}
	if !partyHintRE.MatchString(req.PartyHint) || strings.Contains(req.PartyHint, "::") {
		return badRequest(w, "Party hint %q is not a valid PartyIdString", req.PartyHint)
	}
	key, err := parsePublicKey(req.PublicKey)
	if err != nil {
		return badRequest(w, "public_key: %v", err)
	}
	local := ns.participantUID(name)
	localPermission := uint64(topology.PermissionConfirmation)
	confirmers := uint32(1)
	if req.LocalParticipantObservationOnly {
		localPermission, confirmers = topology.PermissionObservation, 0
	}
	hosts := []topology.Host{{ParticipantUID: local, Permission: localPermission}}
	seen := map[string]bool{local: true}
	for _, group := range []struct {
		uids       []string
		permission uint64
	}{{req.OtherConfirmingParticipantUids, topology.PermissionConfirmation}, {req.ObservingParticipantUids, topology.PermissionObservation}} {
		for _, uid := range group.uids {
			switch {
			case uid == local:
				return badRequest(w, "participant %s is this participant, which hosts the party already", uid)
			case seen[uid]:
				return badRequest(w, "participant %s is named more than once", uid)
			}
			seen[uid] = true
			hosts = append(hosts, topology.Host{ParticipantUID: uid, Permission: group.permission})
		}
		if group.permission == topology.PermissionConfirmation {
			confirmers += uint32(len(group.uids))
		}
	}
	threshold := req.ConfirmationThreshold
	if threshold == 0 {
		threshold = confirmers // Canton's default: all confirmers
	}
	switch {
	case confirmers == 0:
		return badRequest(w, "at least one participant must confirm for the party")
	case threshold > confirmers:
		return badRequest(w, "confirmation threshold %d exceeds the %d confirming participants", threshold, confirmers)
	}
	fp := key.Fingerprint()
	partyID := req.PartyHint + "::" + fp
	signing := func(usage uint64) topology.SigningKey {
		return topology.SigningKey{Format: topology.FormatSPKI, Data: key.SPKI, Usage: []uint64{usage}, Spec: topology.SpecNumber(key.Spec)}
	}
	txs := []topology.Transaction{
		{Operation: topology.OpAddReplace, Serial: 1, NamespaceDelegation: &topology.NamespaceDelegation{Namespace: fp, Key: signing(topology.UsageNamespace)}},
		{Operation: topology.OpAddReplace, Serial: 1, PartyToKey: &topology.PartyToKeyMapping{Party: partyID, Threshold: 1, Keys: []topology.SigningKey{signing(topology.UsageProtocol)}}},
		{Operation: topology.OpAddReplace, Serial: 1, PartyToParticipant: &topology.PartyToParticipant{Party: partyID, Threshold: threshold, Participants: hosts}},
	}
	raw := make([][]byte, len(txs))
	encoded := make([]string, len(txs))
	for i, tx := range txs {
		raw[i] = tx.Marshal()
		encoded[i] = base64.StdEncoding.EncodeToString(raw[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"partyId": partyID, "publicKeyFingerprint": fp, "topologyTransactions": encoded,
		"multiHash": base64.StdEncoding.EncodeToString(topology.MultiHash(raw)),
	})
	return false
}

// keyFormatRaw is what Canton's TypeScript ledger client sends for an Ed25519 key.
const keyFormatRaw = "CRYPTO_KEY_FORMAT_RAW"

// parsePublicKey turns a raw Ed25519 key into its SubjectPublicKeyInfo, which
// the transactions carry; its fingerprint, over the 32 key bytes, is the same.
func parsePublicKey(pk ledgerapi.SigningPublicKey) (topology.Key, error) {
	data, err := base64.StdEncoding.DecodeString(pk.KeyData)
	if err != nil {
		return topology.Key{}, errors.New("key_data is not base64")
	}
	switch pk.Format {
	case topology.KeyFormatSPKI:
		return topology.ParseKey(data, pk.KeySpec)
	case keyFormatRaw:
		if pk.KeySpec != topology.SpecEd25519 {
			return topology.Key{}, fmt.Errorf("key format %s is supported for key spec %s only, not %q", keyFormatRaw, topology.SpecEd25519, pk.KeySpec)
		}
		if len(data) != ed25519.PublicKeySize {
			return topology.Key{}, fmt.Errorf("a raw Ed25519 key has %d bytes, this one %d", ed25519.PublicKeySize, len(data))
		}
		spki, err := x509.MarshalPKIXPublicKey(ed25519.PublicKey(data))
		if err != nil {
			return topology.Key{}, err
		}
		return topology.ParseKey(spki, pk.KeySpec)
	}
	return topology.Key{}, fmt.Errorf("key format %q is not supported here, only %s and %s", pk.Format, topology.KeyFormatSPKI, keyFormatRaw)
}

type onboarding struct {
	raw        [][]byte
	sigs       [][]ledgerapi.Signature
	party      string
	key        topology.Key
	toKey      *topology.PartyToKeyMapping
	toHosts    *topology.PartyToParticipant
	toHostsRaw []byte
	serial     uint32
	delegation bool
}

func decodeOnboarding(txs []ledgerapi.SignedTransaction) (*onboarding, error) {
	if len(txs) == 0 {
		return nil, errors.New("onboarding_transactions must not be empty")
	}
	o := &onboarding{}
	for i, st := range txs {
		raw, err := base64.StdEncoding.DecodeString(st.Transaction)
		if err != nil {
			return nil, fmt.Errorf("onboarding_transactions[%d] is not base64", i)
		}
		tx, err := topology.Unmarshal(raw)
		if err != nil {
			return nil, fmt.Errorf("onboarding_transactions[%d]: %v", i, err)
		}
		if tx.Operation != topology.OpAddReplace {
			return nil, fmt.Errorf("onboarding_transactions[%d] does not add a mapping", i)
		}
		o.raw, o.sigs = append(o.raw, raw), append(o.sigs, ptr.Deref(st.Signatures, nil))
		switch {
		case tx.NamespaceDelegation != nil && !o.delegation:
			nd := tx.NamespaceDelegation
			if nd.Key.Format != topology.FormatSPKI {
				return nil, fmt.Errorf("the namespace key's format is not supported here, only %s", topology.KeyFormatSPKI)
			}
			if o.key, err = topology.ParseKey(nd.Key.Data, topology.SpecName(nd.Key.Spec)); err != nil {
				return nil, fmt.Errorf("the namespace key: %v", err)
			}
			if o.key.Fingerprint() != nd.Namespace {
				return nil, fmt.Errorf("namespace %s is not the fingerprint of its root key", nd.Namespace)
			}
			o.delegation = true
		case tx.PartyToKey != nil && o.toKey == nil:
			o.toKey = tx.PartyToKey
		case tx.PartyToParticipant != nil && o.toHosts == nil:
			o.toHosts, o.serial, o.toHostsRaw = tx.PartyToParticipant, tx.Serial, raw
		default:
			return nil, fmt.Errorf("onboarding_transactions[%d] is not a mapping an external party is onboarded with, or repeats one", i)
		}
	}
	if o.toHosts == nil {
		return nil, errors.New("a PartyToParticipant mapping must be provided")
	}
	if !o.delegation {
		return nil, errors.New("the party's namespace is not known here: provide its NamespaceDelegation")
	}
	o.party = o.toHosts.Party
	if _, ns, _ := strings.Cut(o.party, "::"); ns != o.key.Fingerprint() {
		return nil, fmt.Errorf("party %s is not in the namespace of the delegated key", o.party)
	}
	if o.toKey != nil && o.toKey.Party != o.party {
		return nil, errors.New("the PartyToKeyMapping is for another party")
	}
	return o, nil
}

func (n *Network) allocateExternal(w http.ResponseWriter, r *http.Request, name string, ns *nodeState) bool {
	var req ledgerapi.AllocateExternalPartyRequest
	if !n.decodeOnSynchronizer(w, r, &req, &req.Synchronizer) {
		return false
	}
	o, err := decodeOnboarding(req.OnboardingTransactions)
	if err != nil {
		return badRequest(w, "%v", err)
	}
	u, ok := ns.userOf(w, ptr.Deref(req.UserId, ""))
	if !ok {
		return false
	}
	local := ns.participantUID(name)
	multiHash := topology.MultiHash(o.raw)
	// A signed multi-hash is spent per participant: each hosting participant
	// of a multi-hosted party receives the same signed transactions once.
	used := spentKey(local, multiHash)
	if _, ok := n.st.UsedMultiHashes[used]; ok {
		return cantonError(w, http.StatusConflict, codeMultiHashUsed, "An allocation with these topology transactions was already attempted with an accepted signature; generate the topology again and sign the new multi-hash", catExists, grpcExists)
	}
	if err := authorized(o, ptr.Deref(req.MultiHashSignatures, nil), multiHash); err != nil {
		return invalid(w, codeInvalidSignature, "%v", err)
	}
	// The signature is accepted: the multi-hash is spent whatever follows.
	n.st.UsedMultiHashes[used] = o.party

	hosts, unknown, err := n.hostsOf(o.toHosts.Participants, o.toHosts.Threshold, local)
	switch {
	case unknown:
		cantonError(w, http.StatusNotFound, codeUnknownMembers, err.Error(), catMissing, grpcMissing)
		return true
	case err != nil:
		badRequest(w, "%v", err)
		return true
	}
	switch h, ok := n.st.Hosting[o.party]; {
	case ok && ns.Parties[o.party] == nil && h.Proposal != nil && bytes.Equal(h.Proposal.Tx, o.toHostsRaw):
		// A co-host receives the transactions the party signed and signs the proposal.
		n.sign(o.party, h, ns.Fingerprint)
	case ok || ns.Parties[o.party] != nil:
		cantonError(w, http.StatusConflict, "PARTY_ALREADY_EXISTS", "Party already exists: party "+o.party+" is already allocated", catExists, grpcExists)
		return true
	default:
		// Allocated here: it takes effect once each co-host has signed too.
		h = &hosting{KeySPKI: o.key.SPKI, KeySpec: o.key.Spec,
			Proposal: &proposal{Serial: o.serial, Threshold: o.toHosts.Threshold, Hosts: hosts, Tx: o.toHostsRaw}}
		n.st.Hosting[o.party] = h
		n.sign(o.party, h, o.key.Fingerprint())
		n.sign(o.party, h, ns.Fingerprint)
	}
	if ns.Parties[o.party] == nil { // not promoted yet (promoting lists it on every host)
		ns.Parties[o.party] = &party{ID: o.party, External: true, ResourceVersion: ns.nextVersion()}
	}
	if u != nil {
		u.Rights = appendNew(u.Rights, []right{{Kind: "CanActAs", Party: o.party}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"partyId": o.party})
	return true
}

func spentKey(uid string, multiHash []byte) string {
	return uid + "/" + hex.EncodeToString(multiHash)
}

// authorized requires the party's key to have signed the multi-hash, or each
// transaction's own hash; every signature given must verify.
func authorized(o *onboarding, multi []ledgerapi.Signature, multiHash []byte) error {
	for _, s := range multi {
		if err := verify(o.key, s, multiHash); err != nil {
			return err
		}
	}
	signedEach := true
	for i, sigs := range o.sigs {
		for _, s := range sigs {
			if err := verify(o.key, s, topology.TransactionHash(o.raw[i])); err != nil {
				return err
			}
		}
		signedEach = signedEach && len(sigs) > 0
	}
	if len(multi) == 0 && !signedEach {
		return errors.New("the onboarding transactions are not signed by the party's key")
	}
	return nil
}

// verify checks a signature of msg by key, in the format and algorithm Canton pairs with its spec.
func verify(key topology.Key, s ledgerapi.Signature, msg []byte) error {
	if s.SignedBy != key.Fingerprint() {
		return fmt.Errorf("signature by key %s, which is not the party's key %s", s.SignedBy, key.Fingerprint())
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil || len(sig) == 0 {
		return errors.New("the signature is not base64")
	}
	pub, err := key.Public()
	if err != nil {
		return err
	}
	want := map[string][2]string{
		topology.SpecEd25519:   {"SIGNING_ALGORITHM_SPEC_ED25519", "SIGNATURE_FORMAT_CONCAT"},
		topology.SpecP256:      {"SIGNING_ALGORITHM_SPEC_EC_DSA_SHA_256", "SIGNATURE_FORMAT_DER"},
		topology.SpecP384:      {"SIGNING_ALGORITHM_SPEC_EC_DSA_SHA_384", "SIGNATURE_FORMAT_DER"},
		topology.SpecSecp256k1: {"SIGNING_ALGORITHM_SPEC_EC_DSA_SHA_256", "SIGNATURE_FORMAT_DER"},
	}[key.Spec]
	if s.SigningAlgorithmSpec != want[0] || s.Format != want[1] {
		return fmt.Errorf("a key of spec %s signs with %s in %s, not %s in %s", key.Spec, want[0], want[1], s.SigningAlgorithmSpec, s.Format)
	}
	ok := false
	switch k := pub.(type) {
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, msg, sig)
	case *ecdsa.PublicKey:
		if key.Spec == topology.SpecP384 {
			d := sha512.Sum384(msg)
			ok = ecdsa.VerifyASN1(k, d[:], sig)
		} else {
			d := sha256.Sum256(msg)
			ok = ecdsa.VerifyASN1(k, d[:], sig)
		}
	case *secp256k1.PublicKey:
		d := sha256.Sum256(msg)
		parsed, err := secpecdsa.ParseDERSignature(sig)
		ok = err == nil && parsed.Verify(d[:], k)
	}
	if !ok {
		return fmt.Errorf("the signature by %s does not verify", key.Fingerprint())
	}
	return nil
}
