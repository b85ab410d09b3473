// Package topology is Canton's side of an external party's onboarding, as
// far as validator-manager needs it: the party's public signing key and its
// fingerprint, the topology transactions and the hashes the party signs.
package topology

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Signing key specs by the ledger API's names (SigningKeySpec).
const (
	SpecEd25519   = "SIGNING_KEY_SPEC_EC_CURVE25519"
	SpecP256      = "SIGNING_KEY_SPEC_EC_P256"
	SpecP384      = "SIGNING_KEY_SPEC_EC_P384"
	SpecSecp256k1 = "SIGNING_KEY_SPEC_EC_SECP256K1"
)

// KeyFormatSPKI is the ledger API's name of a DER X.509 SubjectPublicKeyInfo (CryptoKeyFormat).
const KeyFormatSPKI = "CRYPTO_KEY_FORMAT_DER_X509_SUBJECT_PUBLIC_KEY_INFO"

var (
	oidEd25519   = asn1.ObjectIdentifier{1, 3, 101, 112}
	oidECKey     = asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}
	oidP256      = asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7}
	oidP384      = asn1.ObjectIdentifier{1, 3, 132, 0, 34}
	oidSecp256k1 = asn1.ObjectIdentifier{1, 3, 132, 0, 10}
)

// Key is a public signing key.
type Key struct {
	Spec string
	// SPKI is the DER SubjectPublicKeyInfo, as given.
	SPKI []byte
	// Point is the SubjectPublicKeyInfo's key bits: the 32 bytes of an
	// Ed25519 key, the SEC 1 point of an EC key.
	Point []byte
}

type subjectPublicKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	PublicKey asn1.BitString
}

// ParseKey reads spki as a DER SubjectPublicKeyInfo of a key of spec; an EC
// point must be on its curve.
func ParseKey(spki []byte, spec string) (Key, error) {
	var info subjectPublicKeyInfo
	rest, err := asn1.Unmarshal(spki, &info)
	if err != nil || len(rest) > 0 {
		return Key{}, errors.New("not a DER-encoded X.509 SubjectPublicKeyInfo")
	}
	k := Key{Spec: spec, SPKI: spki, Point: info.PublicKey.RightAlign()}
	alg := info.Algorithm.Algorithm
	var curve asn1.ObjectIdentifier
	if alg.Equal(oidECKey) {
		if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &curve); err != nil {
			return Key{}, errors.New("an EC key without a named curve")
		}
	}
	want := map[string]string{SpecEd25519: "an Ed25519 key", SpecP256: "an EC P-256 key", SpecP384: "an EC P-384 key", SpecSecp256k1: "an EC secp256k1 key"}[spec]
	if want == "" {
		return Key{}, fmt.Errorf("unknown key spec %q", spec)
	}
	switch {
	case spec == SpecEd25519 && alg.Equal(oidEd25519):
		if len(k.Point) != ed25519.PublicKeySize {
			return Key{}, fmt.Errorf("an Ed25519 key has %d bytes, this one %d", ed25519.PublicKeySize, len(k.Point))
		}
	case spec == SpecP256 && curve.Equal(oidP256), spec == SpecP384 && curve.Equal(oidP384):
		if _, err := x509.ParsePKIXPublicKey(spki); err != nil {
			return Key{}, fmt.Errorf("not a valid EC public key: %v", err)
		}
	case spec == SpecSecp256k1 && curve.Equal(oidSecp256k1):
		if _, err := secp256k1.ParsePubKey(k.Point); err != nil {
			return Key{}, fmt.Errorf("not a valid secp256k1 public key: %v", err)
		}
	default:
		return Key{}, fmt.Errorf("the key is not %s (key spec %s)", want, spec)
	}
	return k, nil
}

// Fingerprint is Canton's fingerprint of the key: the multihash of SHA-256
// with hash purpose 12 (PublicKeyFingerprint), in hex ("1220…"). It is
// taken over the 32 key bytes for Ed25519 and over the SubjectPublicKeyInfo
// for EC keys (Canton keeps the fingerprints keys had before it stored them
// as SubjectPublicKeyInfo).
func (k Key) Fingerprint() string {
	data := k.SPKI
	if k.Spec == SpecEd25519 {
		data = k.Point
	}
	return hex.EncodeToString(Hash(PurposePublicKeyFingerprint, data))
}

// Public is the key as crypto/ed25519, crypto/ecdsa (P-256, P-384) or
// decred's secp256k1 verify with it.
func (k Key) Public() (any, error) {
	switch k.Spec {
	case SpecSecp256k1:
		return secp256k1.ParsePubKey(k.Point)
	case SpecEd25519:
		return ed25519.PublicKey(bytes.Clone(k.Point)), nil
	case SpecP256, SpecP384:
		pub, err := x509.ParsePKIXPublicKey(k.SPKI)
		if err != nil {
			return nil, err
		}
		if ec, ok := pub.(*ecdsa.PublicKey); ok {
			return ec, nil
		}
	}
	return nil, fmt.Errorf("keys of spec %s are not supported", k.Spec)
}

// PublicKeyFingerprint is Canton's fingerprint of a public key as the admin
// API carries it: a DER SubjectPublicKeyInfo is fingerprinted like Key
// (the 32 key bytes of an Ed25519 key, the whole SubjectPublicKeyInfo
// otherwise); a key in any other format over its bytes as given.
func PublicKeyFingerprint(spki bool, data []byte) string {
	if spki {
		var info subjectPublicKeyInfo
		if rest, err := asn1.Unmarshal(data, &info); err == nil && len(rest) == 0 && info.Algorithm.Algorithm.Equal(oidEd25519) {
			data = info.PublicKey.RightAlign()
		}
	}
	return hex.EncodeToString(Hash(PurposePublicKeyFingerprint, data))
}
