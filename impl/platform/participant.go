package platform

import (
	"context"
	"encoding/json"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	participantv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/participant/v30"
	cryptoadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/crypto/admin/v30"
	cryptov30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/crypto/v30"
	topologyadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/topology/admin/v30"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/topology"
)

// GetParticipantStatus passes ParticipantStatus on in protobuf JSON form.
func (s *Server) GetParticipantStatus(ctx context.Context, req platformapi.GetParticipantStatusRequestObject) (platformapi.GetParticipantStatusResponseObject, error) {
	a, err := s.admin(ctx, "getParticipantStatus", req.Name)
	if err != nil {
		return nil, err
	}
	st, err := a.Status.ParticipantStatus(ctx, &participantv30.ParticipantStatusRequest{})
	if err != nil {
		return nil, err
	}
	raw, err := protojson.Marshal(st)
	if err != nil {
		return nil, domain.Internal(err)
	}
	var out platformapi.GetParticipantStatus200JSONResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, domain.Internal(err)
	}
	return out, nil
}

// GetValidatorKeys lists the participant's own keys (VaultService.ListMyKeys),
// with Canton's fingerprint of each, which the admin API does not carry.
func (s *Server) GetValidatorKeys(ctx context.Context, req platformapi.GetValidatorKeysRequestObject) (platformapi.GetValidatorKeysResponseObject, error) {
	a, err := s.admin(ctx, "getValidatorKeys", req.Name)
	if err != nil {
		return nil, err
	}
	r, err := a.Vault.ListMyKeys(ctx, &cryptoadminv30.ListMyKeysRequest{})
	if err != nil {
		return nil, err
	}
	out := platformapi.GetValidatorKeys200JSONResponse{}
	for _, m := range r.GetPrivateKeysMetadata() {
		out = append(out, vaultKey(m))
	}
	return out, nil
}

// vaultKey is one key of the vault as the contract shows it.
func vaultKey(m *cryptoadminv30.PrivateKeyMetadata) platformapi.VaultKey {
	k := platformapi.VaultKey{Name: domain.NonZero(m.GetPublicKeyWithName().GetName()), KmsKeyId: m.KmsKeyId}
	pk := m.GetPublicKeyWithName().GetPublicKey()
	var format cryptov30.CryptoKeyFormat
	var data []byte
	if sk := pk.GetSigningPublicKey(); sk != nil {
		k.Purpose, format, data = platformapi.VaultKeyPurposeSigning, sk.GetFormat(), sk.GetPublicKey()
		k.KeySpec = ptr.To(sk.GetKeySpec().String())
		usage := []string{}
		for _, u := range sk.GetUsage() {
			usage = append(usage, u.String())
		}
		k.Usage = &usage
	} else {
		ek := pk.GetEncryptionPublicKey()
		k.Purpose, format, data = platformapi.VaultKeyPurposeEncryption, ek.GetFormat(), ek.GetPublicKey()
		k.KeySpec = ptr.To(ek.GetKeySpec().String())
	}
	k.Format, k.PublicKey = ptr.To(format.String()), &data
	k.Fingerprint = topology.PublicKeyFingerprint(format == cryptov30.CryptoKeyFormat_CRYPTO_KEY_FORMAT_DER_X509_SUBJECT_PUBLIC_KEY_INFO, data)
	return k
}

// LookupParticipant finds the participants whose UID starts with the prefix
// among those that trust the synchronizer (their SynchronizerTrustCertificate).
func (s *Server) LookupParticipant(ctx context.Context, req platformapi.LookupParticipantRequestObject) (platformapi.LookupParticipantResponseObject, error) {
	prefix := req.Params.ParticipantUid
	if strings.TrimSpace(prefix) == "" {
		return nil, domain.Invalid("participantUid", "must not be blank")
	}
	a, p, err := s.identified(ctx, "lookupParticipant", req.Name)
	if err != nil {
		return nil, err
	}
	r, err := a.TopologyRead.ListSynchronizerTrustCertificate(ctx, &topologyadminv30.ListSynchronizerTrustCertificateRequest{BaseQuery: p.headQuery(false), FilterUid: prefix})
	if err != nil {
		return nil, err
	}
	out := platformapi.LookupParticipant200JSONResponse{ParticipantUid: prefix, Matches: []string{}}
	for _, res := range r.GetResults() {
		if uid := res.GetItem().GetParticipantUid(); strings.HasPrefix(uid, prefix) {
			out.Matches = append(out.Matches, uid)
		}
	}
	out.Found = len(out.Matches) > 0
	return out, nil
}
