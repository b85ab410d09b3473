package sandbox

import (
	"context"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	healthv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/health/v30"
	participantv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/participant/v30"
	cryptoadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/crypto/admin/v30"
	cryptov30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/crypto/v30"
	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
	topologyadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/topology/admin/v30"
	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/topology"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// Each participant also serves the part of Canton's admin gRPC API in
// openapi/proto/ over the same state as its JSON Ledger API.

// ProtocolVersion is the protocol version the simulated synchronizer runs.
const ProtocolVersion = 34

// Version is the Canton release the simulated participants report.
const Version = "3.5.1"

// adminError is a gRPC status worded as Canton's: CODE(category,correlation id): cause.
func adminError(c codes.Code, code string, category int, format string, args ...any) error {
	return status.Errorf(c, "%s(%d,%s): %s", code, category, randomHex(4), fmt.Sprintf(format, args...))
}

func (n *Network) adminServer(name string) *grpc.Server {
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(n.adminGuard))
	a := &admin{n: n, name: name}
	topologyadminv30.RegisterTopologyManagerReadServiceServer(srv, a)
	topologyadminv30.RegisterTopologyManagerWriteServiceServer(srv, a)
	cryptoadminv30.RegisterVaultServiceServer(srv, a)
	participantv30.RegisterParticipantStatusServiceServer(srv, a)
	participantv30.RegisterPackageServiceServer(srv, a)
	return srv
}

func (n *Network) serveAdmin(name string) (*grpcListener, error) {
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	g := &grpcListener{srv: n.adminServer(name), ln: ln}
	return g, n.servers.add(g)
}

type grpcListener struct {
	srv *grpc.Server
	ln  net.Listener
}

// adminGuard checks the bearer token and shows the fault hook the call as
// POST /<service>/<method>.
func (n *Network) adminGuard(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: info.FullMethod}, Header: http.Header{}}
	if v := md.Get("authorization"); len(v) > 0 {
		r.Header.Set("Authorization", v[0])
	}
	if !n.authorized(r) {
		return nil, adminError(codes.Unauthenticated, "UNAUTHENTICATED", catAuth, "The command is missing a (valid) JWT token")
	}
	if n.opts.Fault != nil {
		if st := n.opts.Fault(upstream.Admin, r.WithContext(ctx)); st != 0 {
			c := codes.Unavailable
			if st < 500 {
				c = codes.InvalidArgument
			}
			return nil, adminError(c, "INJECTED_FAILURE", 1, "injected by the test")
		}
	}
	return handler(ctx, req)
}

type admin struct {
	topologyadminv30.UnimplementedTopologyManagerReadServiceServer
	topologyadminv30.UnimplementedTopologyManagerWriteServiceServer
	cryptoadminv30.UnimplementedVaultServiceServer
	participantv30.UnimplementedParticipantStatusServiceServer
	participantv30.UnimplementedPackageServiceServer
	n    *Network
	name string
}

// locked runs f with the state locked; a change that cannot be saved is
// undone and answered UNAVAILABLE, as the JSON APIs' are.
func (a *admin) locked(mutates bool, f func(ns *nodeState) (changed bool, err error)) error {
	a.n.mu.Lock()
	defer a.n.mu.Unlock()
	ns := a.n.st.Nodes[a.name]
	if !mutates {
		_, err := f(ns)
		return err
	}
	var err error
	if serr := a.n.changeLocked(func() (changed bool) { changed, err = f(ns); return changed }); serr != nil {
		return adminError(codes.Unavailable, "UNAVAILABLE", catUnavailable, "%v", serr)
	}
	return err
}

// checkStore reports whether st names the synchronizer's store (by logical or physical id).
func (a *admin) checkStore(st *topologyadminv30.StoreId, required bool) (bool, error) {
	if st == nil || st.GetStore() == nil {
		if required {
			return false, adminError(codes.InvalidArgument, "FIELD_NOT_SET", catInvalid, "store: the field is required")
		}
		return true, nil
	}
	s := st.GetSynchronizer()
	if s == nil {
		return false, nil // the authorized or a temporary store: nothing of the synchronizer's
	}
	id := a.n.st.SynchronizerID
	if s.GetId() != id && s.GetPhysicalId() != physicalID(id) {
		return false, adminError(codes.NotFound, "TOPOLOGY_STORE_NOT_FOUND", catMissing, "no topology store for synchronizer %s", s.String())
	}
	return true, nil
}

// physicalID is a logical synchronizer id with its protocol version and serial appended.
func physicalID(id string) string { return fmt.Sprintf("%s::%d-0", id, ProtocolVersion) }

// list runs f under the lock for a read of the synchronizer's store; nothing
// is listed from another store, nor when empty (a query the sandbox never answers).
func (a *admin) list(q *topologyadminv30.BaseQuery, empty bool, f func()) error {
	if q == nil || q.GetTimeQuery() == nil {
		return adminError(codes.InvalidArgument, "FIELD_NOT_SET", catInvalid, "base_query.time_query: the field is required")
	}
	return a.locked(false, func(*nodeState) (bool, error) {
		ok, err := a.checkStore(q.GetStore(), false)
		if err == nil && ok && !empty {
			f()
		}
		return false, err
	})
}

// added is the context of a mapping transaction tx added to the synchronizer's store.
func (a *admin) added(tx []byte, serial int32, signedBy []string) *topologyadminv30.BaseResult {
	store := &topologyadminv30.StoreId{Store: &topologyadminv30.StoreId_Synchronizer{Synchronizer: &topologyadminv30.Synchronizer{Kind: &topologyadminv30.Synchronizer_Id{Id: a.n.st.SynchronizerID}}}}
	return &topologyadminv30.BaseResult{Store: store, Operation: protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE,
		TransactionHash: topology.TransactionHash(tx), Serial: serial, SignedByFingerprints: signedBy}
}

func (a *admin) ListPartyToParticipant(ctx context.Context, req *topologyadminv30.ListPartyToParticipantRequest) (*topologyadminv30.ListPartyToParticipantResponse, error) {
	q := req.GetBaseQuery()
	out := &topologyadminv30.ListPartyToParticipantResponse{}
	err := a.list(q, q.GetOperation() == protocolv30.Enums_TOPOLOGY_CHANGE_OP_REMOVE, func() {
		for _, m := range a.n.mappings(q.GetProposals()) {
			if !strings.HasPrefix(m.party, req.GetFilterParty()) {
				continue
			}
			if f := req.GetFilterParticipant(); f != "" && !slices.ContainsFunc(m.Hosts, func(h hostingPart) bool { return strings.Contains(h.ParticipantUID, f) }) {
				continue
			}
			if f := q.GetFilterSignedKey(); f != "" && !slices.ContainsFunc(m.SignedBy, func(fp string) bool { return strings.HasPrefix(fp, f) }) {
				continue
			}
			out.Results = append(out.Results, &topologyadminv30.ListPartyToParticipantResponse_Result{
				Context: a.added(m.Tx, int32(m.Serial), slices.Clone(m.SignedBy)), Item: m.proto(),
			})
		}
	})
	return out, err
}

func (m mappingEntry) proto() *protocolv30.PartyToParticipant {
	p := partyToParticipant(m.party, m.Threshold, m.Hosts)
	if len(m.keySPKI) > 0 {
		p.PartySigningKeys = &cryptov30.SigningKeysWithThreshold{Threshold: 1, Keys: []*cryptov30.SigningPublicKey{{
			Format: cryptov30.CryptoKeyFormat_CRYPTO_KEY_FORMAT_DER_X509_SUBJECT_PUBLIC_KEY_INFO, PublicKey: m.keySPKI,
			KeySpec: cryptov30.SigningKeySpec(cryptov30.SigningKeySpec_value[m.keySpec]),
			Usage:   []cryptov30.SigningKeyUsage{cryptov30.SigningKeyUsage_SIGNING_KEY_USAGE_PROTOCOL},
		}}}
	}
	return p
}

func (a *admin) ListSynchronizerTrustCertificate(ctx context.Context, req *topologyadminv30.ListSynchronizerTrustCertificateRequest) (*topologyadminv30.ListSynchronizerTrustCertificateResponse, error) {
	q := req.GetBaseQuery()
	out := &topologyadminv30.ListSynchronizerTrustCertificateResponse{}
	err := a.list(q, q.GetProposals(), func() {
		var uids []string
		for v, ns := range a.n.st.Nodes {
			if uid := ns.participantUID(v); strings.HasPrefix(uid, req.GetFilterUid()) {
				uids = append(uids, uid)
			}
		}
		slices.Sort(uids)
		for _, uid := range uids {
			cert := &protocolv30.SynchronizerTrustCertificate{ParticipantUid: uid, SynchronizerId: a.n.st.SynchronizerID}
			tx := topologyTx(1, &protocolv30.TopologyMapping{Mapping: &protocolv30.TopologyMapping_SynchronizerTrustCertificate{SynchronizerTrustCertificate: cert}})
			out.Results = append(out.Results, &topologyadminv30.ListSynchronizerTrustCertificateResponse_Result{
				Context: a.added(tx, 1, []string{namespaceOf(uid)}), Item: cert,
			})
		}
	})
	return out, err
}

// topologyTx is a versioned TopologyTransaction adding mapping m.
func topologyTx(serial uint32, m *protocolv30.TopologyMapping) []byte {
	return topology.Marshal(&protocolv30.TopologyTransaction{Operation: protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE, Serial: serial, Mapping: m})
}

func (a *admin) GenerateTransactions(ctx context.Context, req *topologyadminv30.GenerateTransactionsRequest) (*topologyadminv30.GenerateTransactionsResponse, error) {
	out := &topologyadminv30.GenerateTransactionsResponse{}
	err := a.locked(false, func(*nodeState) (bool, error) {
		for i, p := range req.GetProposals() {
			if _, err := a.checkStore(p.GetStore(), true); err != nil {
				return false, err
			}
			if p.GetOperation() != protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE {
				return false, adminError(codes.InvalidArgument, "INVALID_ARGUMENT", catInvalid, "proposals[%d].operation: the sandbox generates ADD_REPLACE only", i)
			}
			ptp := p.GetMapping().GetPartyToParticipant()
			if ptp == nil {
				return false, status.Errorf(codes.Unimplemented, "the sandbox generates party-to-participant mappings only")
			}
			serial := p.GetSerial()
			if serial == 0 {
				serial = 1
				if h := a.n.st.Hosting[ptp.GetParty()]; h != nil {
					serial = h.Serial + 1
				}
			}
			tx := topologyTx(serial, p.GetMapping())
			out.GeneratedTransactions = append(out.GeneratedTransactions, &topologyadminv30.GenerateTransactionsResponse_GeneratedTransaction{
				SerializedTransaction: tx, TransactionHash: topology.TransactionHash(tx),
			})
		}
		return false, nil
	})
	return out, err
}

func (a *admin) Authorize(ctx context.Context, req *topologyadminv30.AuthorizeRequest) (*topologyadminv30.AuthorizeResponse, error) {
	if req.GetProposal() != nil {
		return nil, status.Errorf(codes.Unimplemented, "the sandbox authorizes existing proposals by transaction_hash only")
	}
	want, err := hex.DecodeString(req.GetTransactionHash())
	if err != nil || len(want) != 34 {
		return nil, adminError(codes.InvalidArgument, "INVALID_ARGUMENT", catInvalid, "transaction_hash: not the hex of a 34-byte multihash")
	}
	var out *topologyadminv30.AuthorizeResponse
	err = a.locked(true, func(ns *nodeState) (bool, error) {
		if _, err := a.checkStore(req.GetStore(), true); err != nil {
			return false, err
		}
		for id, h := range a.n.st.Hosting {
			p := h.Proposal
			if p == nil || !slices.Equal(topology.TransactionHash(p.Tx), want) {
				continue
			}
			if !slices.Contains(h.required(id, p), ns.Fingerprint) {
				return false, adminError(codes.FailedPrecondition, "NO_APPROPRIATE_SIGNING_KEY_IN_STORE", 9, "this participant holds no key that authorizes the proposal for party %s", id)
			}
			if req.GetMustFullyAuthorize() && len(h.missing(id, p)) > 1 {
				return false, adminError(codes.FailedPrecondition, "TOPOLOGY_TRANSACTION_NOT_FULLY_AUTHORIZED", 9, "the proposal for party %s still needs other signatures", id)
			}
			tx, signedBy := p.Tx, slices.Clone(append(p.SignedBy, ns.Fingerprint))
			complete := a.n.sign(id, h, ns.Fingerprint)
			out = &topologyadminv30.AuthorizeResponse{Transaction: signedTx(tx, signedBy, !complete)}
			return true, nil
		}
		return false, adminError(codes.NotFound, "TOPOLOGY_TRANSACTION_NOT_FOUND", catMissing, "no proposal with hash %s", req.GetTransactionHash())
	})
	return out, err
}

// signedTx is a SignedTopologyTransaction with one signature entry per
// signer (participants' signatures are simulated: their bytes are empty).
func signedTx(tx []byte, signedBy []string, isProposal bool) *protocolv30.SignedTopologyTransaction {
	st := &protocolv30.SignedTopologyTransaction{Transaction: tx, Proposal: isProposal}
	for _, fp := range slices.Compact(slices.Sorted(slices.Values(signedBy))) {
		st.Signatures = append(st.Signatures, &cryptov30.Signature{SignedBy: fp, Format: cryptov30.SignatureFormat_SIGNATURE_FORMAT_CONCAT, SigningAlgorithmSpec: cryptov30.SigningAlgorithmSpec_SIGNING_ALGORITHM_SPEC_ED25519})
	}
	return st
}

// AddTransactions takes external parties' mappings signed by the party's key
// as their proposals, effective once fully authorized.
func (a *admin) AddTransactions(ctx context.Context, req *topologyadminv30.AddTransactionsRequest) (*topologyadminv30.AddTransactionsResponse, error) {
	err := a.locked(true, func(ns *nodeState) (bool, error) {
		if _, err := a.checkStore(req.GetStore(), true); err != nil {
			return false, err
		}
		changed := false
		for i, st := range req.GetTransactions() {
			ok, err := a.addTransaction(i, st)
			changed = changed || ok
			if err != nil {
				return changed, err
			}
		}
		return changed, nil
	})
	if err != nil {
		return nil, err
	}
	return &topologyadminv30.AddTransactionsResponse{}, nil
}

func (a *admin) addTransaction(i int, st *protocolv30.SignedTopologyTransaction) (bool, error) {
	tx, err := topology.Unmarshal(st.GetTransaction())
	if err != nil {
		return false, adminError(codes.InvalidArgument, "INVALID_ARGUMENT", catInvalid, "transactions[%d]: %v", i, err)
	}
	ptp := tx.GetMapping().GetPartyToParticipant()
	if ptp == nil || tx.GetOperation() != protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE {
		return false, status.Errorf(codes.Unimplemented, "transactions[%d]: the sandbox adds party-to-participant mappings (ADD_REPLACE) only", i)
	}
	id := ptp.GetParty()
	h := a.n.st.Hosting[id]
	if h == nil || len(h.KeySPKI) == 0 {
		return false, adminError(codes.NotFound, "UNKNOWN_PARTY", catMissing, "party %s is not an external party whose key this synchronizer knows", id)
	}
	if tx.GetSerial() != h.Serial+1 {
		return false, adminError(codes.FailedPrecondition, "SERIAL_MISMATCH", 9, "The given serial %d does not match the expected serial %d of party %s", tx.GetSerial(), h.Serial+1, id)
	}
	if len(ptp.GetParticipants()) == 0 {
		return false, adminError(codes.InvalidArgument, "INVALID_ARGUMENT", catInvalid, "party %s must keep at least one hosting participant", id)
	}
	hosts, unknown, err := a.n.hostsOf(ptp.GetParticipants(), ptp.GetThreshold(), "")
	switch {
	case unknown:
		return false, adminError(codes.NotFound, codeUnknownMembers, catMissing, "%v", err)
	case err != nil:
		return false, adminError(codes.InvalidArgument, "INVALID_ARGUMENT", catInvalid, "%v", err)
	}
	key, err := topology.ParseKey(h.KeySPKI, h.KeySpec)
	if err != nil {
		return false, status.Errorf(codes.Internal, "the party's key: %v", err)
	}
	hash := topology.TransactionHash(st.GetTransaction())
	signedByParty := false
	for _, sig := range st.GetSignatures() {
		ws := ledgerapi.Signature{Format: sig.GetFormat().String(), Signature: base64.StdEncoding.EncodeToString(sig.GetSignature()),
			SignedBy: sig.GetSignedBy(), SigningAlgorithmSpec: sig.GetSigningAlgorithmSpec().String()}
		if err := verify(key, ws, hash); err != nil {
			return false, adminError(codes.InvalidArgument, codeInvalidSignature, catInvalid, "%v", err)
		}
		signedByParty = true
	}
	if !signedByParty {
		return false, adminError(codes.FailedPrecondition, "UNAUTHORIZED_TOPOLOGY_TRANSACTION", 9, "no signature by the party's key %s", key.Fingerprint())
	}
	if h.Proposal == nil || !slices.Equal(h.Proposal.Tx, st.GetTransaction()) {
		// A new change supersedes a proposal of the same serial that was never completed.
		h.Proposal = &proposal{Serial: tx.GetSerial(), Threshold: ptp.GetThreshold(), Hosts: hosts, Tx: st.GetTransaction()}
	}
	a.n.sign(id, h, key.Fingerprint())
	return true, nil
}

// ListMyKeys answers the public halves of the participant's keys.
func (a *admin) ListMyKeys(ctx context.Context, req *cryptoadminv30.ListMyKeysRequest) (*cryptoadminv30.ListMyKeysResponse, error) {
	out := &cryptoadminv30.ListMyKeysResponse{}
	err := a.locked(false, func(ns *nodeState) (bool, error) {
		for _, k := range ns.Keys {
			pk, fp, err := k.public()
			if err != nil {
				return false, status.Errorf(codes.Internal, "key %s: %v", k.Name, err)
			}
			f := req.GetFilters()
			if !strings.Contains(fp, f.GetFingerprint()) || !strings.Contains(k.Name, f.GetName()) {
				continue
			}
			out.PrivateKeysMetadata = append(out.PrivateKeysMetadata, &cryptoadminv30.PrivateKeyMetadata{
				PublicKeyWithName: &cryptov30.PublicKeyWithName{PublicKey: pk, Name: k.Name},
			})
		}
		return false, nil
	})
	return out, err
}

// public derives the key's public half and Canton fingerprint from its stored
// key pair, whose first 32 bytes are the private key's seed.
func (k nodeKey) public() (*cryptov30.PublicKey, string, error) {
	raw, err := base64.StdEncoding.DecodeString(k.KeyPair)
	if err != nil || len(raw) < 32 {
		return nil, "", errors.New("the stored key pair is not 32 bytes or more of Base64")
	}
	if strings.HasSuffix(k.Name, "encryption") {
		priv, err := ecdh.P256().NewPrivateKey(raw[:32])
		if err != nil {
			return nil, "", err
		}
		der, err := x509.MarshalPKIXPublicKey(priv.PublicKey())
		if err != nil {
			return nil, "", err
		}
		return &cryptov30.PublicKey{Key: &cryptov30.PublicKey_EncryptionPublicKey{EncryptionPublicKey: &cryptov30.EncryptionPublicKey{
			Format: cryptov30.CryptoKeyFormat_CRYPTO_KEY_FORMAT_DER_X509_SUBJECT_PUBLIC_KEY_INFO, PublicKey: der, KeySpec: cryptov30.EncryptionKeySpec_ENCRYPTION_KEY_SPEC_EC_P256,
		}}}, hex.EncodeToString(topology.Hash(topology.PurposePublicKeyFingerprint, der)), nil
	}
	pub := ed25519.NewKeyFromSeed(raw[:32]).Public().(ed25519.PublicKey)
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, "", err
	}
	usage := cryptov30.SigningKeyUsage_SIGNING_KEY_USAGE_PROTOCOL
	if strings.HasSuffix(k.Name, "namespace") {
		usage = cryptov30.SigningKeyUsage_SIGNING_KEY_USAGE_NAMESPACE
	}
	return &cryptov30.PublicKey{Key: &cryptov30.PublicKey_SigningPublicKey{SigningPublicKey: &cryptov30.SigningPublicKey{
		Format: cryptov30.CryptoKeyFormat_CRYPTO_KEY_FORMAT_DER_X509_SUBJECT_PUBLIC_KEY_INFO, PublicKey: der,
		KeySpec: cryptov30.SigningKeySpec_SIGNING_KEY_SPEC_EC_CURVE25519, Usage: []cryptov30.SigningKeyUsage{usage},
	}}}, hex.EncodeToString(topology.Hash(topology.PurposePublicKeyFingerprint, pub)), nil
}

func (a *admin) ParticipantStatus(ctx context.Context, _ *participantv30.ParticipantStatusRequest) (*participantv30.ParticipantStatusResponse, error) {
	var out *participantv30.ParticipantStatusResponse
	err := a.locked(false, func(ns *nodeState) (bool, error) {
		ports := map[string]int32{}
		if nd := a.n.nodes[a.name]; nd != nil {
			ports["admin"] = int32(port(nd.admin.ln))
		}
		out = &participantv30.ParticipantStatusResponse{Kind: &participantv30.ParticipantStatusResponse_Status{Status: &participantv30.ParticipantStatusResponse_ParticipantStatusResponseStatus{
			CommonStatus: &healthv30.Status{
				Uid: ns.participantUID(a.name), Uptime: durationpb.New(time.Since(a.n.started).Truncate(time.Second)), Ports: ports, Active: true,
				TopologyQueues: &healthv30.TopologyQueueStatus{}, Version: Version,
				Components: []*healthv30.ComponentStatus{
					{Name: "db-storage", Status: &healthv30.ComponentStatus_Ok{Ok: &healthv30.ComponentStatus_StatusData{}}},
					{Name: "sequencer-client", Status: &healthv30.ComponentStatus_Ok{Ok: &healthv30.ComponentStatus_StatusData{}}},
				},
			},
			ConnectedSynchronizers:    []*participantv30.ConnectedSynchronizer{{PhysicalSynchronizerId: physicalID(a.n.st.SynchronizerID), Health: participantv30.ConnectedSynchronizer_HEALTH_HEALTHY}},
			Active:                    true,
			SupportedProtocolVersions: []int32{ProtocolVersion},
		}}}
		return false, nil
	})
	return out, err
}

// ListDars answers the Splice DARs, then those uploaded here.
func (a *admin) ListDars(ctx context.Context, req *participantv30.ListDarsRequest) (*participantv30.ListDarsResponse, error) {
	out := &participantv30.ListDarsResponse{}
	err := a.locked(false, func(ns *nodeState) (bool, error) {
		for _, d := range ns.darList() {
			if strings.HasPrefix(d.Name, req.GetFilterName()) {
				out.Dars = append(out.Dars, &participantv30.DarDescription{Main: d.MainPackageID, Name: d.Name, Version: d.Version})
			}
		}
		return false, nil
	})
	out.Dars = limit(out.Dars, req.GetLimit())
	return out, err
}

func (a *admin) ListPackages(ctx context.Context, req *participantv30.ListPackagesRequest) (*participantv30.ListPackagesResponse, error) {
	out := &participantv30.ListPackagesResponse{}
	err := a.locked(false, func(ns *nodeState) (bool, error) {
		for _, d := range ns.darList() {
			for _, p := range d.Packages {
				out.PackageDescriptions = append(out.PackageDescriptions, &participantv30.PackageDescription{PackageId: p, Name: d.Name, Version: d.Version})
			}
		}
		return false, nil
	})
	out.PackageDescriptions = limit(out.PackageDescriptions, req.GetLimit())
	return out, err
}

// limit is the first n of s, all of s when n is not positive.
func limit[T any](s []T, n int32) []T {
	if n > 0 && len(s) > int(n) {
		return s[:n]
	}
	return s
}
