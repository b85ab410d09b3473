package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
)

// state is what the sandbox keeps in its data directory.
type state struct {
	// Installation is the database's instance id: another installation's
	// state is refused at open instead of serving its parties and keys.
	Installation string `json:"installation,omitempty"`
	ClientSecret string `json:"clientSecret"`
	// TokenKey is the token endpoint's ES256 signing key (PKCS #8 DER),
	// kept so that tokens stay valid across a restart.
	TokenKey       []byte                `json:"tokenKey,omitempty"`
	SynchronizerID string                `json:"synchronizerId"`
	Nodes          map[string]*nodeState `json:"nodes"`
	// Hosting is the synchronizer's mappings of external parties, by party id.
	Hosting map[string]*hosting `json:"hosting,omitempty"`
	// UsedMultiHashes are the multi-hashes an allocate accepted a signature
	// of (spentKey), with their party: each is good once per participant.
	UsedMultiHashes map[string]string `json:"usedMultiHashes,omitempty"`
}

// hosting is an external party's effective mapping (Serial 0 while there is
// none) and its proposal.
type hosting struct {
	proposal
	Proposal *proposal `json:"proposal,omitempty"`
	// Pending is an earlier sandbox's hosts yet to authorize (migrateHosting).
	Pending []string `json:"pending,omitempty"`
	// KeySPKI and KeySpec are the party's key, which checks its signatures of hosting changes.
	KeySPKI []byte `json:"keySpki,omitempty"`
	KeySpec string `json:"keySpec,omitempty"`
}

type hostingPart struct {
	ParticipantUID string `json:"participantUid"`
	Permission     string `json:"permission"` // CONFIRMATION or OBSERVATION
}

// nodeState is one validator's participant and validator app.
type nodeState struct {
	// Fingerprint is the participant's namespace, that of its parties.
	Fingerprint string `json:"fingerprint"`
	// OperatorUser is the validator operator's ledger and wallet user.
	OperatorUser  string            `json:"operatorUser"`
	OperatorParty string            `json:"operatorParty"`
	Parties       map[string]*party `json:"parties"`
	Users         map[string]*user  `json:"users"`
	WalletUsers   map[string]string `json:"walletUsers"` // username -> party
	Packages      []string          `json:"packages"`
	Dars          []dar             `json:"dars"`
	Traffic       traffic           `json:"traffic"`
	Keys          []nodeKey         `json:"keys"`
	Version       int64             `json:"version"` // resource version counter
	// LedgerClientID (auth.ledgerApiClientId) and AdminUser (auth.ledgerApiUser)
	// act as the operator user; WalletUser (auth.walletUser) may take a data snapshot.
	LedgerClientID string `json:"ledgerClientId,omitempty"`
	AdminUser      string `json:"adminUser,omitempty"`
	WalletUser     string `json:"walletUser,omitempty"`
}

type party struct {
	ID string `json:"id"`
	// External parties hold their own key (allocated from a signed topology).
	External        bool              `json:"external,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	ResourceVersion string            `json:"resourceVersion"`
}

type user struct {
	ID              string            `json:"id"`
	PrimaryParty    string            `json:"primaryParty,omitempty"`
	IsDeactivated   bool              `json:"isDeactivated,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	ResourceVersion string            `json:"resourceVersion"`
	Rights          []right           `json:"rights,omitempty"`
}

// right is a user right: Kind is the ledger's name (CanActAs, ...).
type right struct {
	Kind  string `json:"kind"`
	Party string `json:"party,omitempty"`
}

type dar struct {
	MainPackageID string   `json:"mainPackageId"`
	Name          string   `json:"name,omitempty"`
	Version       string   `json:"version,omitempty"`
	Packages      []string `json:"packages"`
	SizeBytes     int64    `json:"sizeBytes"`
}

type traffic struct {
	Consumed  int64 `json:"consumed"`
	Limit     int64 `json:"limit"`
	Purchased int64 `json:"purchased"`
}

type nodeKey struct {
	Name    string `json:"name"`
	KeyPair string `json:"keyPair"` // base64, as the identities dump carries it
}

func newNodeState(validator string) *nodeState {
	var keys []nodeKey
	for _, name := range []string{"participant-signing", "participant-encryption", "participant-namespace"} {
		k := make([]byte, 64)
		_, _ = rand.Read(k)
		keys = append(keys, nodeKey{Name: name, KeyPair: base64.StdEncoding.EncodeToString(k)})
	}
	// The participant's namespace is its namespace key's fingerprint, as in
	// Canton; public fails only on a stored key pair, not on one made here.
	_, fp, _ := keys[2].public()
	ns := &nodeState{
		Keys:         keys,
		Fingerprint:  fp,
		OperatorUser: validator + "-validator-operator",
		Parties:      map[string]*party{},
		Users:        map[string]*user{},
		WalletUsers:  map[string]string{},
		Traffic:      traffic{Limit: 5_000_000, Purchased: 5_000_000},
	}
	ns.OperatorParty = ns.addParty(validator + "-validator-1")
	ns.Users[ns.OperatorUser] = &user{ID: ns.OperatorUser, PrimaryParty: ns.OperatorParty, ResourceVersion: ns.nextVersion(),
		Rights: []right{{Kind: "ParticipantAdmin"}, {Kind: "CanActAs", Party: ns.OperatorParty}}}
	ns.WalletUsers[ns.OperatorUser] = ns.OperatorParty
	for _, name := range spliceDars {
		h := sha256.Sum256([]byte(name + fp))
		ns.Packages = append(ns.Packages, hex.EncodeToString(h[:]))
	}
	return ns
}

// spliceDars are the DARs every validator runs, their main packages the first of Packages.
var spliceDars = []string{"splice-amulet", "splice-wallet", "splice-wallet-payments"}

const spliceDarVersion = "0.1.14"

// darList is every DAR of the participant: the Splice DARs, then those uploaded.
func (ns *nodeState) darList() []dar {
	var out []dar
	for i, name := range spliceDars {
		if i < len(ns.Packages) {
			out = append(out, dar{MainPackageID: ns.Packages[i], Name: name, Version: spliceDarVersion, Packages: []string{ns.Packages[i]}})
		}
	}
	return append(out, ns.Dars...)
}

func (ns *nodeState) nextVersion() string {
	ns.Version++
	return strconv.FormatInt(ns.Version, 10)
}

func (ns *nodeState) addParty(hint string) string {
	id := hint + "::" + ns.Fingerprint
	ns.Parties[id] = &party{ID: id, ResourceVersion: ns.nextVersion()}
	return id
}

func (ns *nodeState) participantUID(validator string) string {
	return "participant-" + validator + "::" + ns.Fingerprint
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// observe lets the options' fault and wrapper see every request.
func (n *Network) observe(up string, h http.Handler) http.Handler {
	if n.opts.Fault != nil {
		h = n.faulty(up, h)
	}
	if n.opts.Wrap != nil {
		h = n.opts.Wrap(up, h)
	}
	return h
}

func (n *Network) faulty(up string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := n.opts.Fault(up, r)
		switch {
		case status == 0 || r.URL.Path == "/oauth2/token":
			h.ServeHTTP(w, r)
		case up == "ledger":
			cantonError(w, status, "INJECTED_FAILURE", "injected by the test", 1, 14)
		default:
			spliceError(w, status, "injected by the test")
		}
	})
}
