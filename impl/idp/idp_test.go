package idp

import (
	"context"
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

// walletUsers is what both providers offer the reconciler.
type walletUsers interface {
	CreateWalletUser(ctx context.Context, validator, claim string) (domain.CreatedUser, error)
	DeleteWalletUser(ctx context.Context, validator, claim string) error
}

// TestDeleteWalletUserByClaim: an interrupted create is undone by its claim,
// and a user of the same name made by another create or by hand stays.
func TestDeleteWalletUserByClaim(t *testing.T) {
	providers := map[string]func(t *testing.T) (walletUsers, func() int){
		"local": func(t *testing.T) (walletUsers, func() int) {
			l := openLocal(t, t.TempDir())
			return l, func() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.users) }
		},
		"keycloak": func(t *testing.T) (walletUsers, func() int) {
			f := newFakeKeycloak(t)
			return f.adapter(t), f.userCount
		},
	}
	tests := []struct {
		name         string
		createdClaim string
		deleteClaim  string
		want         int // users left
	}{
		{"same claim", "c1", "c1", 0},
		{"other claim", "c1", "c2", 1},
		{"user without claim", "", "c1", 1},
		{"empty claim deletes nothing", "", "", 1},
		{"absent user", "-", "c1", 0},
	}
	for name, open := range providers {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				p, count := open(t)
				ctx := context.Background()
				if tt.createdClaim != "-" {
					if _, err := p.CreateWalletUser(ctx, "val1", tt.createdClaim); err != nil {
						t.Fatal(err)
					}
				}
				if err := p.DeleteWalletUser(ctx, "val1", tt.deleteClaim); err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				if got := count(); got != tt.want {
					t.Errorf("got %d users, want %d", got, tt.want)
				}
			})
		}
	}
}
