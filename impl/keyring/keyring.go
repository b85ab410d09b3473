// Package keyring derives passwords and sealing keys from the cluster's
// password key (the Secret validator-manager-password-key). Each derivation
// is labelled with its purpose, so no two uses can yield the same bytes.
package keyring

import (
	"cmp"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// KeySize is the size of the cluster's password key.
const KeySize = 32

// Purpose labels of the derivations.
const (
	databasePurpose  = "validator-manager database password"
	temporaryPurpose = "validator-manager wallet user temporary password"
	sealPurpose      = "validator-manager pending secrets"
	custodyPurpose   = "validator-manager custody provider credentials"
)

func mac(key []byte, purpose, name, claim string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose + "\x00" + name + "\x00" + claim))
	return m.Sum(nil)
}

// DatabasePassword is a validator's generated database password, URL-safe
// (no quoting in a JDBC URL, a shell or SQL). Derived rather than drawn, so
// that a Secret deleted by hand is written again with the password the
// database was initialised with; the claim gives a re-created validator another.
func DatabasePassword(key []byte, name, claim string) string {
	return base64.RawURLEncoding.EncodeToString(mac(key, databasePurpose, name, claim))
}

// Alphabet of temporary passwords: characters that cannot be misread (no
// I, O, l, 0, 1) since a person types the password once, and symbols that
// need no quoting in a shell, JSON or a form.
const (
	upperChars  = "ABCDEFGHJKLMNPQRSTUVWXYZ"
	lowerChars  = "abcdefghijkmnopqrstuvwxyz"
	digitChars  = "23456789"
	symbolChars = "-_.+=@%^"
	allChars    = upperChars + lowerChars + digitChars + symbolChars

	passwordLength = 24
	// perClass characters of each class are guaranteed, which satisfies
	// Keycloak policies such as upperCase(2) lowerCase(2) digits(2) specialChars(2).
	perClass = 2
)

// TemporaryPassword is the temporary password of a validator's wallet user,
// derived so that the handler that records the create answers it at once
// and the leader creates the user with it whenever it gets there.
func TemporaryPassword(key []byte, name, claim string) string {
	r := stream{key: mac(key, temporaryPurpose, name, claim)}
	out := make([]byte, 0, passwordLength)
	for _, class := range []string{upperChars, lowerChars, digitChars, symbolChars} {
		for range perClass {
			out = append(out, class[r.intn(len(class))])
		}
	}
	for len(out) < passwordLength {
		out = append(out, allChars[r.intn(len(allChars))])
	}
	// Fisher-Yates, so the guaranteed characters sit anywhere.
	for i := len(out) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// stream is a deterministic byte stream: HMAC-SHA256 of a counter under
// key (HKDF-Expand's construction), read a byte at a time.
type stream struct {
	key     []byte
	block   []byte
	counter uint64
}

func (s *stream) byte() byte {
	if len(s.block) == 0 {
		m := hmac.New(sha256.New, s.key)
		m.Write(fmt.Appendf(nil, "%d", s.counter))
		s.counter++
		s.block = m.Sum(nil)
	}
	b := s.block[0]
	s.block = s.block[1:]
	return b
}

// intn is uniform in [0, n) for n ≤ 256: bytes at or above the largest
// multiple of n are drawn again.
func (s *stream) intn(n int) int {
	limit := 256 - 256%n
	for {
		if b := int(s.byte()); b < limit {
			return b % n
		}
	}
}

// sealed is the plaintext of a pending-secrets column: the values given,
// by their role.
type sealed struct {
	Onboarding string `json:"onboarding,omitempty"`
	LedgerAPI  string `json:"ledgerApi,omitempty"`
	Database   string `json:"database,omitempty"`
}

// aead is AES-256-GCM under the key derived from key with HKDF for purpose.
func aead(key []byte, purpose string) (cipher.AEAD, error) {
	k, err := hkdf.Key(sha256.New, key, nil, purpose, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Seal encrypts the given secret values of validator name (its claim
// binds them to this validator: a row re-created under the name cannot
// open them); "" when no value is given.
func Seal(key []byte, name, claim string, s domain.ValidatorSecrets) (string, error) {
	if s == (domain.ValidatorSecrets{}) {
		return "", nil
	}
	return seal(key, sealPurpose, name+"\x00"+claim,
		sealed{Onboarding: s.OnboardingSecret, LedgerAPI: s.LedgerAPIClientSecret, Database: s.DatabasePassword})
}

// seal encrypts v's JSON under the key derived for purpose, bound to label.
func seal(key []byte, purpose, label string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", errors.New("the values to seal cannot be encoded")
	}
	g, err := aead(key, purpose)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, g.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(g.Seal(nonce, nonce, plain, []byte(label))), nil
}

// open decrypts what seal made into v; ErrUnsealable when it does not open.
func open(key []byte, purpose, label, text string, v any) error {
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return ErrUnsealable
	}
	g, err := aead(key, purpose)
	if err != nil {
		return err
	}
	if len(raw) < g.NonceSize() {
		return ErrUnsealable
	}
	plain, err := g.Open(nil, raw[:g.NonceSize()], raw[g.NonceSize():], []byte(label))
	// Never wrap the decoder's error: it can quote the plaintext.
	if err != nil || json.Unmarshal(plain, v) != nil {
		return ErrUnsealable
	}
	return nil
}

// ErrUnsealable is a pending-secrets column that does not open under the
// key: written under another key (the key's Secret was replaced) or damaged.
var ErrUnsealable = errors.New("the pending secret values do not open under the cluster's password key")

// Open decrypts what Seal made; "" opens to no values.
func Open(key []byte, name, claim, text string) (domain.ValidatorSecrets, error) {
	if text == "" {
		return domain.ValidatorSecrets{}, nil
	}
	var s sealed
	if err := open(key, sealPurpose, name+"\x00"+claim, text, &s); err != nil {
		return domain.ValidatorSecrets{}, err
	}
	return domain.ValidatorSecrets{OnboardingSecret: s.Onboarding, LedgerAPIClientSecret: s.LedgerAPI, DatabasePassword: s.Database}, nil
}

// Merge is pending with the values next gives over it: an edit that gives
// one value keeps the others a create or an earlier edit gave that the
// leader has not written yet.
func Merge(pending, next domain.ValidatorSecrets) domain.ValidatorSecrets {
	pending.OnboardingSecret = cmp.Or(next.OnboardingSecret, pending.OnboardingSecret)
	pending.LedgerAPIClientSecret = cmp.Or(next.LedgerAPIClientSecret, pending.LedgerAPIClientSecret)
	pending.DatabasePassword = cmp.Or(next.DatabasePassword, pending.DatabasePassword)
	return pending
}

// SealCredentials encrypts a validator's custody provider credentials for
// the database (bound to the validator's name); the leader opens them to
// write them into the wallet gateway's Secret.
func SealCredentials(key []byte, validator string, c domain.CustodyCredentials) (string, error) {
	return seal(key, custodyPurpose, validator, c)
}

// OpenCredentials decrypts what SealCredentials made; ErrUnsealable when it
// does not open under key.
func OpenCredentials(key []byte, validator, text string) (domain.CustodyCredentials, error) {
	var c domain.CustodyCredentials
	if err := open(key, custodyPurpose, validator, text, &c); err != nil {
		return domain.CustodyCredentials{}, err
	}
	return c, nil
}
