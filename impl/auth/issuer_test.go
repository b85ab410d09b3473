package auth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/auth"
)

// TestDevIssuerKeepsItsKey: a token issued before a restart still verifies
// after it, and the key file is private to its owner.
func TestDevIssuerKeepsItsKey(t *testing.T) {
	dir := t.TempDir()
	first, err := auth.OpenDevIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	token, err := first.Issue(auth.DevSubject, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	second, err := auth.OpenDevIssuer(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.NewVerifier(second.PublicKeys(), auth.DevIssuerName, "").Verify(context.Background(), token)
	if err != nil {
		t.Fatalf("token from before the restart: got %v, want it verified", err)
	}
	if p.Subject != auth.DevSubject {
		t.Fatalf("got subject %q, want %q", p.Subject, auth.DevSubject)
	}
	info, err := os.Stat(filepath.Join(dir, "dev-signing-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("got key file mode %o, want 600", perm)
	}

	other, err := auth.OpenDevIssuer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.NewVerifier(other.PublicKeys(), auth.DevIssuerName, "").Verify(context.Background(), token); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("token of another data directory: got %v, want ErrUnauthenticated", err)
	}
}
