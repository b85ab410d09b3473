package topology_test

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
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"google.golang.org/protobuf/proto"

	cryptov30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/crypto/v30"
	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
	"github.com/validator-manager/validator-manager/impl/topology"
)

func spki(t *testing.T, pub any) []byte {
	t.Helper()
	b, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// secp256k1SPKI builds what x509 cannot: an id-ecPublicKey SPKI on secp256k1.
func secp256k1SPKI(t *testing.T, point []byte) []byte {
	t.Helper()
	params, _ := asn1.Marshal(asn1.ObjectIdentifier{1, 3, 132, 0, 10})
	b, err := asn1.Marshal(struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}{pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}, Parameters: asn1.RawValue{FullBytes: params}},
		asn1.BitString{Bytes: point, BitLength: 8 * len(point)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseKey(t *testing.T) {
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	k1, _ := secp256k1.GeneratePrivateKey()
	offCurve := secp256k1SPKI(t, append([]byte{4}, make([]byte, 64)...))
	tests := []struct {
		name string
		spki []byte
		spec string
		want string // error substring; "" = valid
	}{
		{"Ed25519", spki(t, edPub), topology.SpecEd25519, ""},
		{"P-256", spki(t, &p256.PublicKey), topology.SpecP256, ""},
		{"P-384", spki(t, &p384.PublicKey), topology.SpecP384, ""},
		{"secp256k1", secp256k1SPKI(t, k1.PubKey().SerializeUncompressed()), topology.SpecSecp256k1, ""},
		{"secp256k1 compressed", secp256k1SPKI(t, k1.PubKey().SerializeCompressed()), topology.SpecSecp256k1, ""},
		{"secp256k1 point off the curve", offCurve, topology.SpecSecp256k1, "not a valid secp256k1 public key"},
		{"Ed25519 key named P-256", spki(t, edPub), topology.SpecP256, "is not an EC P-256 key"},
		{"P-256 key named Ed25519", spki(t, &p256.PublicKey), topology.SpecEd25519, "is not an Ed25519 key"},
		{"P-384 key named P-256", spki(t, &p384.PublicKey), topology.SpecP256, "is not an EC P-256 key"},
		{"raw Ed25519 bytes", edPub, topology.SpecEd25519, "not a DER-encoded"},
		{"trailing bytes", append(spki(t, edPub), 0), topology.SpecEd25519, "not a DER-encoded"},
		{"unknown spec", spki(t, edPub), "RSA", "unknown key spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := topology.ParseKey(tt.spki, tt.spec)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want a key", err)
				}
				if _, err := k.Public(); err != nil {
					t.Fatalf("public key: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// cantonHash is Canton's hash written out: SHA-256 of the purpose (4 bytes
// big endian) and the data, behind the multihash prefix 0x12 0x20.
func cantonHash(purpose byte, data []byte) []byte {
	h := sha256.Sum256(append([]byte{0, 0, 0, purpose}, data...))
	return append([]byte{0x12, 0x20}, h[:]...)
}

func TestFingerprint(t *testing.T) {
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ed, _ := topology.ParseKey(spki(t, edPub), topology.SpecEd25519)
	ec, _ := topology.ParseKey(spki(t, &p256.PublicKey), topology.SpecP256)
	tests := []struct {
		name string
		key  topology.Key
		over []byte
	}{
		{"Ed25519 over the 32 key bytes", ed, edPub},
		{"EC over the SubjectPublicKeyInfo", ec, ec.SPKI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.key.Fingerprint(), hex.EncodeToString(cantonHash(12, tt.over)); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
			if fp := tt.key.Fingerprint(); !strings.HasPrefix(fp, "1220") || len(fp) != 68 {
				t.Fatalf("got %s, want 1220 and 64 hex digits", fp)
			}
		})
	}
}

func TestMultiHash(t *testing.T) {
	a, b := []byte("first transaction"), []byte("second transaction")
	ha, hb := cantonHash(11, a), cantonHash(11, b)
	if hex.EncodeToString(ha) > hex.EncodeToString(hb) {
		ha, hb = hb, ha
	}
	combined := []byte{0, 0, 0, 2, 0, 0, 0, 34}
	combined = append(combined, ha...)
	combined = append(combined, 0, 0, 0, 34)
	combined = append(combined, hb...)
	want := cantonHash(55, combined)
	for _, order := range [][][]byte{{a, b}, {b, a}} {
		if got := topology.MultiHash(order); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %x, want %x (whatever the order)", got, want)
		}
	}
}

func TestTransactionRoundTrip(t *testing.T) {
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	key := &cryptov30.SigningPublicKey{Format: cryptov30.CryptoKeyFormat_CRYPTO_KEY_FORMAT_DER_X509_SUBJECT_PUBLIC_KEY_INFO, PublicKey: spki(t, edPub),
		Usage: []cryptov30.SigningKeyUsage{cryptov30.SigningKeyUsage_SIGNING_KEY_USAGE_NAMESPACE}, KeySpec: cryptov30.SigningKeySpec_SIGNING_KEY_SPEC_EC_CURVE25519}
	mappings := []*protocolv30.TopologyMapping{
		{Mapping: &protocolv30.TopologyMapping_NamespaceDelegation{NamespaceDelegation: &protocolv30.NamespaceDelegation{Namespace: "1220ab", TargetKey: key, IsRootDelegation: true,
			Restriction: &protocolv30.NamespaceDelegation_CanSignAllMappings_{CanSignAllMappings: &protocolv30.NamespaceDelegation_CanSignAllMappings{}}}}},
		{Mapping: &protocolv30.TopologyMapping_PartyToKeyMapping{PartyToKeyMapping: &protocolv30.PartyToKeyMapping{Party: "alice::1220ab", Threshold: 1, SigningKeys: []*cryptov30.SigningPublicKey{key}}}},
		{Mapping: &protocolv30.TopologyMapping_PartyToParticipant{PartyToParticipant: &protocolv30.PartyToParticipant{Party: "alice::1220ab", Threshold: 2, Participants: []*protocolv30.PartyToParticipant_HostingParticipant{
			{ParticipantUid: "participant1::1220cd", Permission: protocolv30.Enums_PARTICIPANT_PERMISSION_CONFIRMATION},
			{ParticipantUid: "participant2::1220ef", Permission: protocolv30.Enums_PARTICIPANT_PERMISSION_OBSERVATION},
		}}}},
	}
	for _, m := range mappings {
		tx := &protocolv30.TopologyTransaction{Operation: protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE, Serial: 1, Mapping: m}
		raw := topology.Marshal(tx)
		// Canton's order: data (field 1) first, version 30 (field 2) last.
		if raw[0] != 0x0a || !bytes.HasSuffix(raw, []byte{0x10, 30}) {
			t.Fatalf("%x: want the data first and version 30 last", raw)
		}
		got, err := topology.Unmarshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, tx) {
			t.Fatalf("got %v, want %v", got, tx)
		}
	}
	for _, bad := range [][]byte{[]byte("not protobuf at all"), {0x0a, 0x05, 1, 2}, {}, {0x0a, 0x00, 0x10, 30}} {
		if _, err := topology.Unmarshal(bad); err == nil {
			t.Errorf("%x: got a transaction, want an error", bad)
		}
	}
}
