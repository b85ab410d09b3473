package platform

import (
	"testing"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

// TestSignatureChoice: absent fields take Ed25519 in CONCAT; a pair no key
// can sign in is refused; every other pair passes unchanged.
func TestSignatureChoice(t *testing.T) {
	t.Parallel()
	concat, der, raw := platformapi.SignatureFormatConcat, platformapi.SignatureFormatDer, platformapi.SignatureFormatRaw
	ed, ecdsa := platformapi.SigningAlgorithmEd25519, platformapi.SigningAlgorithmEcDsaSha256
	for _, c := range []struct {
		name   string
		f      *platformapi.SignatureFormat
		a      *platformapi.SigningAlgorithmSpec
		format platformapi.SignatureFormat
		alg    platformapi.SigningAlgorithmSpec
		ok     bool
	}{
		{"defaults", nil, nil, concat, ed, true},
		{"ecdsa in der", &der, &ecdsa, der, ecdsa, true},
		{"ed25519 in raw", &raw, nil, raw, ed, true},
		{"ed25519 in der", &der, &ed, "", "", false},
		{"ecdsa in the default concat", nil, &ecdsa, "", "", false},
	} {
		format, alg, err := signatureChoice(c.f, c.a)
		if (err == nil) != c.ok || format != c.format || alg != c.alg {
			t.Errorf("%s: got %q %q %v, want %q %q ok=%v", c.name, format, alg, err, c.format, c.alg, c.ok)
		}
	}
}
