package idp

import (
	"context"
	"errors"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// testPassword is a temporary password as keyring derives them.
func testPassword(validator string) string {
	return keyring.TemporaryPassword(make([]byte, keyring.KeySize), validator, "")
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
	CreateWalletUser(ctx context.Context, validator, claim, password string) (domain.CreatedUser, error)
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
					if _, err := p.CreateWalletUser(ctx, "val1", tt.createdClaim, testPassword("val1")); err != nil {
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

// TestCreateWalletUserAdoptsByClaim: creating again a user that carries the
// create's claim adopts it (the leader retries after a crash); a user of the
// same name without that claim is a conflict.
func TestCreateWalletUserAdoptsByClaim(t *testing.T) {
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
		againClaim   string
		wantErr      error
	}{
		{"same claim adopts", "c1", "c1", nil},
		{"other claim", "c1", "c2", domain.ErrConflict},
		{"user without claim", "", "c1", domain.ErrConflict},
		{"no claim", "", "", domain.ErrConflict},
	}
	for name, open := range providers {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				p, count := open(t)
				ctx := context.Background()
				first, err := p.CreateWalletUser(ctx, "val1", tt.createdClaim, testPassword("val1"))
				if err != nil {
					t.Fatal(err)
				}
				again, err := p.CreateWalletUser(ctx, "val1", tt.againClaim, testPassword("val1"))
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				if err == nil && again.ID != first.ID {
					t.Errorf("got id %q, want the first user's %q", again.ID, first.ID)
				}
				if got := count(); got != 1 {
					t.Errorf("got %d users, want 1", got)
				}
			})
		}
	}
}
