package keyring

import (
	"errors"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func key(b byte) []byte {
	k := make([]byte, KeySize)
	k[0] = b
	return k
}

func TestTemporaryPassword(t *testing.T) {
	const draws = 2000
	seen := map[string]bool{}
	for i := range draws {
		p := TemporaryPassword(key(1), "val1", strings.Repeat("c", i%7)+string(rune('a'+i%26))+string(rune(i)))
		if len(p) != passwordLength {
			t.Fatalf("got length %d, want %d", len(p), passwordLength)
		}
		for _, class := range []string{upperChars, lowerChars, digitChars, symbolChars} {
			n := 0
			for _, r := range p {
				if strings.ContainsRune(class, r) {
					n++
				}
			}
			if n < perClass {
				t.Fatalf("got %d characters of %q in %q, want at least %d", n, class, p, perClass)
			}
		}
		if strings.Trim(p, allChars) != "" {
			t.Fatalf("got %q with characters outside the alphabet", p)
		}
		seen[p] = true
	}
	if len(seen) != draws {
		t.Errorf("got %d distinct passwords in %d claims, want all distinct", len(seen), draws)
	}
}

// A derivation depends on the key, the name, the claim and its purpose, and
// only on them.
func TestDerivations(t *testing.T) {
	base := TemporaryPassword(key(1), "val1", "c1")
	if again := TemporaryPassword(key(1), "val1", "c1"); again != base {
		t.Fatalf("got %q then %q, want the same password", base, again)
	}
	for name, other := range map[string]string{
		"other key":   TemporaryPassword(key(2), "val1", "c1"),
		"other name":  TemporaryPassword(key(1), "val2", "c1"),
		"other claim": TemporaryPassword(key(1), "val1", "c2"),
	} {
		if other == base {
			t.Errorf("%s: got the same password", name)
		}
	}
	if DatabasePassword(key(1), "val1", "c1") == DatabasePassword(key(1), "val1", "c2") {
		t.Error("database passwords of two claims are equal")
	}
}

func TestSealOpen(t *testing.T) {
	s := domain.ValidatorSecrets{LedgerAPIClientSecret: "s3cret", DatabasePassword: "pw"}
	text, err := Seal(key(1), "val1", "c1", s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "s3cret") || strings.Contains(text, "pw\"") {
		t.Fatalf("sealed text %q shows a value", text)
	}
	got, err := Open(key(1), "val1", "c1", text)
	if err != nil || got != s {
		t.Fatalf("got %+v, %v, want %+v", got, err, s)
	}
	tests := []struct {
		name, vname, claim, text string
		key                      []byte
	}{
		{"other key", "val1", "c1", text, key(2)},
		{"other validator", "val2", "c1", text, key(1)},
		{"other claim", "val1", "c2", text, key(1)},
		{"damaged", "val1", "c1", text[:len(text)-4] + "AAAA", key(1)},
		{"not base64", "val1", "c1", "!!", key(1)},
	}
	for _, tt := range tests {
		if _, err := Open(tt.key, tt.vname, tt.claim, tt.text); !errors.Is(err, ErrUnsealable) {
			t.Errorf("%s: got %v, want ErrUnsealable", tt.name, err)
		}
	}
	if text, err := Seal(key(1), "val1", "c1", domain.ValidatorSecrets{}); text != "" || err != nil {
		t.Errorf("no values: got %q, %v, want \"\"", text, err)
	}
	if got, err := Open(key(1), "val1", "c1", ""); got != (domain.ValidatorSecrets{}) || err != nil {
		t.Errorf("open \"\": got %+v, %v", got, err)
	}
}

func TestMerge(t *testing.T) {
	got := Merge(domain.ValidatorSecrets{DatabasePassword: "old", OnboardingSecret: "o"},
		domain.ValidatorSecrets{DatabasePassword: "new", LedgerAPIClientSecret: "l"})
	want := domain.ValidatorSecrets{DatabasePassword: "new", OnboardingSecret: "o", LedgerAPIClientSecret: "l"}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// Custody credentials open under the key and validator they were sealed
// for, and under nothing else (not even as pending secrets of that name).
func TestSealCredentials(t *testing.T) {
	key, other := make([]byte, KeySize), make([]byte, KeySize)
	other[0] = 1
	c := domain.CustodyCredentials{APIKey: "key-AKIA", APISecret: "secret-MIIE"}
	text, err := SealCredentials(key, "v1", c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "AKIA") || strings.Contains(text, "MIIE") {
		t.Fatalf("sealed text holds the credentials: %s", text)
	}
	if got, err := OpenCredentials(key, "v1", text); err != nil || got != c {
		t.Fatalf("open: got %v, %v, want the credentials sealed", got, err)
	}
	for _, tc := range []struct {
		name, validator, text string
		key                   []byte
	}{
		{"another validator", "v2", text, key},
		{"another key", "v1", text, other},
		{"damaged", "v1", text[:len(text)-4] + "AAAA", key},
		{"not base64", "v1", "%%%", key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := OpenCredentials(tc.key, tc.validator, tc.text); !errors.Is(err, ErrUnsealable) {
				t.Fatalf("got %v, want ErrUnsealable", err)
			}
		})
	}
	if _, err := Open(key, "v1", "", text); !errors.Is(err, ErrUnsealable) {
		t.Fatalf("opened as pending secrets: got %v, want ErrUnsealable", err)
	}
}
