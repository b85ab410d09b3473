package idp

import (
	"errors"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestTemporaryPassword(t *testing.T) {
	const draws = 2000
	seen := map[string]bool{}
	for range draws {
		p, err := temporaryPassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != passwordLength {
			t.Fatalf("got length %d, want %d", len(p), passwordLength)
		}
		if why := strong(p); why != "" {
			t.Fatalf("got %q: %s, want a strong password", p, why)
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
		t.Errorf("got %d distinct passwords in %d draws, want all distinct", len(seen), draws)
	}
}

func TestWalletUsername(t *testing.T) {
	tests := []struct {
		validator string
		want      string
		wantErr   error
	}{
		{validator: "val1", want: "val1_walletuser"},
		{validator: "My-Validator", want: "my-validator_walletuser"},
		{validator: "", wantErr: domain.ErrInvalid},
		{validator: "  ", wantErr: domain.ErrInvalid},
	}
	for _, tt := range tests {
		got, err := walletUsername(tt.validator)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("walletUsername(%q): got %q, %v, want %q, %v", tt.validator, got, err, tt.want, tt.wantErr)
		}
	}
}
