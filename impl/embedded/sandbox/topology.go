package sandbox

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
)

// The synchronizer's party-to-participant topology. A mapping takes effect
// when the party's key and each host it adds have signed it (Canton's rule).
// Participants sign with their namespace key (their UID's namespace), recorded
// by fingerprint; the party's signatures are verified.

// proposal is a mapping not fully authorized yet (an effective one has the same fields).
type proposal struct {
	Serial    uint32        `json:"serial"`
	Threshold uint32        `json:"threshold"`
	Hosts     []hostingPart `json:"hosts"`
	// Tx is the versioned TopologyTransaction; its hash is what is signed.
	Tx       []byte   `json:"tx,omitempty"`
	SignedBy []string `json:"signedBy,omitempty"`
}

// namespaceOf is the namespace of a UID or party id, name::namespace.
func namespaceOf(uid string) string {
	_, ns, _ := strings.Cut(uid, "::")
	return ns
}

func (h *hosting) required(party string, p *proposal) []string {
	req := []string{namespaceOf(party)}
	for _, host := range p.Hosts {
		if !slices.ContainsFunc(h.Hosts, func(x hostingPart) bool { return x.ParticipantUID == host.ParticipantUID }) {
			req = append(req, namespaceOf(host.ParticipantUID))
		}
	}
	return req
}

func (h *hosting) missing(party string, p *proposal) []string {
	return slices.DeleteFunc(h.required(party, p), func(fp string) bool { return slices.Contains(p.SignedBy, fp) })
}

// sign adds fp's signature to the proposal and reports whether that made it effective.
func (n *Network) sign(party string, h *hosting, fp string) bool {
	p := h.Proposal
	if !slices.Contains(p.SignedBy, fp) {
		p.SignedBy = append(p.SignedBy, fp)
	}
	if len(h.missing(party, p)) > 0 {
		return false
	}
	n.promote(party, h)
	return true
}

// promote makes the proposal effective: the party is listed on its hosts' ledgers only.
func (n *Network) promote(id string, h *hosting) {
	p := h.Proposal
	hosted := map[string]bool{}
	for _, host := range p.Hosts {
		hosted[host.ParticipantUID] = true
	}
	for v, ns := range n.st.Nodes {
		uid := ns.participantUID(v)
		switch {
		case hosted[uid] && ns.Parties[id] == nil:
			ns.Parties[id] = &party{ID: id, External: true, ResourceVersion: ns.nextVersion()}
		case !hosted[uid] && ns.Parties[id] != nil && ns.Parties[id].External:
			delete(ns.Parties, id)
		}
	}
	h.proposal, h.Proposal = *p, nil
}

// hostsOf checks a mapping's hosts as the synchronizer does, in its order:
// each confirms or observes, local (when set) is one of them, each is a
// member it knows (else unknown), and 1 <= threshold <= confirming hosts.
func (n *Network) hostsOf(in []*protocolv30.PartyToParticipant_HostingParticipant, threshold uint32, local string) (hosts []hostingPart, unknown bool, err error) {
	known := map[string]bool{}
	for v, ns := range n.st.Nodes {
		known[ns.participantUID(v)] = true
	}
	var strangers []string
	confirmers := uint32(0)
	for _, h := range in {
		uid, perm := h.GetParticipantUid(), "OBSERVATION"
		switch h.GetPermission() {
		case confirmation:
			perm = "CONFIRMATION"
			confirmers++
		case observation:
		default:
			return nil, false, fmt.Errorf("participant %s of an external party must confirm or observe", uid)
		}
		if !known[uid] {
			strangers = append(strangers, uid)
		}
		hosts = append(hosts, hostingPart{ParticipantUID: uid, Permission: perm})
	}
	slices.Sort(strangers)
	switch {
	case local != "" && !slices.ContainsFunc(hosts, func(h hostingPart) bool { return h.ParticipantUID == local }):
		return nil, false, fmt.Errorf("the external party must be hosted on this participant (%s)", local)
	case len(strangers) > 0:
		return nil, true, fmt.Errorf("The following members are not known on the synchronizer: %s", strings.Join(strangers, ", "))
	case threshold < 1 || threshold > confirmers:
		return nil, false, fmt.Errorf("confirmation threshold %d is not between 1 and the %d confirming participants", threshold, confirmers)
	}
	return hosts, false, nil
}

// mappingEntry is a listed mapping, with an external party's signing key.
type mappingEntry struct {
	party string
	proposal
	keySPKI []byte
	keySpec string
}

// mappings lists the effective mappings or the proposals; local parties'
// are effective, with submission permission, threshold 1 and serial 1.
func (n *Network) mappings(proposals bool) []mappingEntry {
	var out []mappingEntry
	for id, h := range n.st.Hosting {
		switch {
		case proposals && h.Proposal != nil:
			out = append(out, mappingEntry{party: id, proposal: *h.Proposal, keySPKI: h.KeySPKI, keySpec: h.KeySpec})
		case !proposals && h.Serial > 0:
			out = append(out, mappingEntry{party: id, proposal: h.proposal, keySPKI: h.KeySPKI, keySpec: h.KeySpec})
		}
	}
	if !proposals {
		for v, ns := range n.st.Nodes {
			uid := ns.participantUID(v)
			for id, p := range ns.Parties {
				if p.External {
					continue
				}
				hosts := []hostingPart{{ParticipantUID: uid, Permission: "SUBMISSION"}}
				out = append(out, mappingEntry{party: id, proposal: proposal{Serial: 1, Threshold: 1, Hosts: hosts, Tx: mappingTx(id, 1, 1, hosts), SignedBy: []string{ns.Fingerprint}}})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].party < out[j].party })
	return out
}

const (
	confirmation = protocolv30.Enums_PARTICIPANT_PERMISSION_CONFIRMATION
	observation  = protocolv30.Enums_PARTICIPANT_PERMISSION_OBSERVATION
)

var permissions = map[string]protocolv30.Enums_ParticipantPermission{
	"SUBMISSION": protocolv30.Enums_PARTICIPANT_PERMISSION_SUBMISSION, "CONFIRMATION": confirmation, "OBSERVATION": observation,
}

// partyToParticipant is the mapping of party to hosts.
func partyToParticipant(party string, threshold uint32, hosts []hostingPart) *protocolv30.PartyToParticipant {
	p := &protocolv30.PartyToParticipant{Party: party, Threshold: threshold}
	for _, h := range hosts {
		p.Participants = append(p.Participants, &protocolv30.PartyToParticipant_HostingParticipant{ParticipantUid: h.ParticipantUID, Permission: permissions[h.Permission]})
	}
	return p
}

func mappingTx(party string, serial, threshold uint32, hosts []hostingPart) []byte {
	return topologyTx(serial, &protocolv30.TopologyMapping{Mapping: &protocolv30.TopologyMapping_PartyToParticipant{PartyToParticipant: partyToParticipant(party, threshold, hosts)}})
}

// migrateHosting rebuilds the transaction of mappings an earlier sandbox
// recorded without it, and turns its Pending co-hosts into a proposal.
func migrateHosting(st *state) {
	for id, h := range st.Hosting {
		if h.Serial > 0 && len(h.Tx) == 0 {
			h.Tx = mappingTx(id, h.Serial, h.Threshold, h.Hosts)
		}
		if len(h.Pending) == 0 || h.Proposal != nil {
			h.Pending = nil
			continue
		}
		p := &proposal{Serial: h.Serial, Threshold: h.Threshold, Hosts: h.Hosts, Tx: mappingTx(id, h.Serial, h.Threshold, h.Hosts), SignedBy: []string{namespaceOf(id)}}
		for _, host := range h.Hosts {
			if !slices.Contains(h.Pending, host.ParticipantUID) {
				p.SignedBy = append(p.SignedBy, namespaceOf(host.ParticipantUID))
			}
		}
		h.proposal, h.Pending, h.Proposal = proposal{}, nil, p
	}
}
