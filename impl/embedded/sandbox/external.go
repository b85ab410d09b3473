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

	cryptov30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/crypto/v30"
	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
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
	localPermission, confirmers := confirmation, uint32(1)
	if req.LocalParticipantObservationOnly {
		localPermission, confirmers = observation, 0
	}
	hosts := []*protocolv30.PartyToParticipant_HostingParticipant{{ParticipantUid: local, Permission: localPermission}}
	seen := map[string]bool{local: true}
	for _, group := range []struct {
		uids       []string
		permission protocolv30.Enums_ParticipantPermission
	}{{req.OtherConfirmingParticipantUids, confirmation}, {req.ObservingParticipantUids, observation}} {
		for _, uid := range group.uids {
			switch {
			case uid == local:
				return badRequest(w, "participant %s is this participant, which hosts the party already", uid)
			case seen[uid]:
				return badRequest(w, "participant %s is named more than once", uid)
			}
			seen[uid] = true
			hosts = append(hosts, &protocolv30.PartyToParticipant_HostingParticipant{ParticipantUid: uid, Permission: group.permission})
		}
		if group.permission == confirmation {
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
	signing := func(usage cryptov30.SigningKeyUsage) *cryptov30.SigningPublicKey {
		return &cryptov30.SigningPublicKey{Format: cryptov30.CryptoKeyFormat_CRYPTO_KEY_FORMAT_DER_X509_SUBJECT_PUBLIC_KEY_INFO, PublicKey: key.SPKI,
			Usage: []cryptov30.SigningKeyUsage{usage}, KeySpec: cryptov30.SigningKeySpec(cryptov30.SigningKeySpec_value[key.Spec])}
	}
	mappings := []*protocolv30.TopologyMapping{
		{Mapping: &protocolv30.TopologyMapping_NamespaceDelegation{NamespaceDelegation: &protocolv30.NamespaceDelegation{
			Namespace: fp, TargetKey: signing(cryptov30.SigningKeyUsage_SIGNING_KEY_USAGE_NAMESPACE), IsRootDelegation: true, // deprecated, still set for older readers
			Restriction: &protocolv30.NamespaceDelegation_CanSignAllMappings_{CanSignAllMappings: &protocolv30.NamespaceDelegation_CanSignAllMappings{}},
		}}},
		{Mapping: &protocolv30.TopologyMapping_PartyToKeyMapping{PartyToKeyMapping: &protocolv30.PartyToKeyMapping{
			Party: partyID, Threshold: 1, SigningKeys: []*cryptov30.SigningPublicKey{signing(cryptov30.SigningKeyUsage_SIGNING_KEY_USAGE_PROTOCOL)},
		}}},
		{Mapping: &protocolv30.TopologyMapping_PartyToParticipant{PartyToParticipant: &protocolv30.PartyToParticipant{Party: partyID, Threshold: threshold, Participants: hosts}}},
	}
	raw := make([][]byte, len(mappings))
	encoded := make([]string, len(mappings))
	for i, m := range mappings {
		raw[i] = topologyTx(1, m)
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
	toKey      *protocolv30.PartyToKeyMapping
	toHosts    *protocolv30.PartyToParticipant
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
		if tx.GetOperation() != protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE {
			return nil, fmt.Errorf("onboarding_transactions[%d] does not add a mapping", i)
		}
		o.raw, o.sigs = append(o.raw, raw), append(o.sigs, ptr.Deref(st.Signatures, nil))
		m := tx.GetMapping()
		switch nd := m.GetNamespaceDelegation(); {
		case nd != nil && !o.delegation:
			k := nd.GetTargetKey()
			if k.GetFormat() != cryptov30.CryptoKeyFormat_CRYPTO_KEY_FORMAT_DER_X509_SUBJECT_PUBLIC_KEY_INFO {
				return nil, fmt.Errorf("the namespace key's format is not supported here, only %s", topology.KeyFormatSPKI)
			}
			if o.key, err = topology.ParseKey(k.GetPublicKey(), k.GetKeySpec().String()); err != nil {
				return nil, fmt.Errorf("the namespace key: %v", err)
			}
			if o.key.Fingerprint() != nd.GetNamespace() {
				return nil, fmt.Errorf("namespace %s is not the fingerprint of its root key", nd.GetNamespace())
			}
			o.delegation = true
		case m.GetPartyToKeyMapping() != nil && o.toKey == nil:
			o.toKey = m.GetPartyToKeyMapping()
		case m.GetPartyToParticipant() != nil && o.toHosts == nil:
			o.toHosts, o.serial, o.toHostsRaw = m.GetPartyToParticipant(), tx.GetSerial(), raw
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
	o.party = o.toHosts.GetParty()
	if _, ns, _ := strings.Cut(o.party, "::"); ns != o.key.Fingerprint() {
		return nil, fmt.Errorf("party %s is not in the namespace of the delegated key", o.party)
	}
	if o.toKey != nil && o.toKey.GetParty() != o.party {
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

	hosts, unknown, err := n.hostsOf(o.toHosts.GetParticipants(), o.toHosts.GetThreshold(), local)
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
			Proposal: &proposal{Serial: o.serial, Threshold: o.toHosts.GetThreshold(), Hosts: hosts, Tx: o.toHostsRaw}}
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
