package auth

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
)

// DevIssuerName is the iss claim of development tokens.
const DevIssuerName = "validator-manager-dev"

// DevSubject is the sub claim of development tokens.
const DevSubject = "dev-operator"

const devKeyFile = "dev-signing-key.pem"

// DevIssuer signs the development tokens of the embedded default with an RSA
// key kept in the data directory, so tokens survive restarts.
type DevIssuer struct {
	key jwk.Key
}

// ErrNoDevKey is LoadDevIssuer's answer for a data directory without a key.
var ErrNoDevKey = errors.New("no development signing key")

// OpenDevIssuer loads the signing key from dataDir, creating it on first use.
func OpenDevIssuer(dataDir string) (*DevIssuer, error) { return openDevIssuer(dataDir, true) }

// LoadDevIssuer loads the signing key from dataDir and never creates one: the
// server that uses the old one would refuse its tokens.
func LoadDevIssuer(dataDir string) (*DevIssuer, error) { return openDevIssuer(dataDir, false) }

func openDevIssuer(dataDir string, create bool) (*DevIssuer, error) {
	path := filepath.Join(dataDir, devKeyFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			abs, _ := filepath.Abs(path)
			return nil, fmt.Errorf("%w at %s: run the command with the data directory of the server (--data-dir or VM_DATA_DIR), or start `validator-manager serve` once with this one", ErrNoDevKey, abs)
		}
		raw, err = createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("development signing key: %w", err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("development signing key %s: not PEM", path)
	}
	priv, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("development signing key %s: %w", path, err)
	}
	key, err := jwk.FromRaw(priv)
	if err != nil {
		return nil, err
	}
	// RFC 7638's thumbprint is of the public parameters; PublicKeys copies
	// these fields to the public key.
	kid, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	_ = key.Set(jwk.KeyIDKey, fmt.Sprintf("%x", kid[:8]))
	_ = key.Set(jwk.AlgorithmKey, jwa.RS256)
	_ = key.Set(jwk.KeyUsageKey, jwk.ForSignature)
	return &DevIssuer{key: key}, nil
}

func createKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	raw := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	// O_EXCL: two processes starting at once keep the first key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	return raw, atomicfile.WriteSynced(f, raw)
}

// PublicKeys is the JWKS that verifies this issuer's tokens.
func (d *DevIssuer) PublicKeys() jwk.Set {
	pub, _ := d.key.PublicKey()
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	return set
}

// Issue signs a token for subject, valid for ttl.
func (d *DevIssuer) Issue(subject string, ttl time.Duration) (string, error) {
	return d.IssueWith(subject, ttl, nil)
}

// IssueWith is Issue with further claims (realm_access, groups, scope: the
// claims api.auth.roles maps to roles).
func (d *DevIssuer) IssueWith(subject string, ttl time.Duration, claims map[string]any) (string, error) {
	now := time.Now()
	b := jwt.NewBuilder().
		Issuer(DevIssuerName).
		Subject(subject).
		JwtID(uuid.NewString()).
		IssuedAt(now).
		NotBefore(now).
		Expiration(now.Add(ttl))
	for k, v := range claims {
		b = b.Claim(k, v)
	}
	tok, err := b.Build()
	if err != nil {
		return "", err
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256, d.key))
	if err != nil {
		return "", err
	}
	return string(signed), nil
}
