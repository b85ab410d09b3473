package idp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// openLocal opens a provider in dir.
func openLocal(t *testing.T, dir string) *Local {
	t.Helper()
	l, err := OpenLocal(dir, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// readUsers is the provider's state as stored: its file and journal
// (both, as text), and the users they hold, as the next open reads them.
func readUsers(t *testing.T, dir string) (string, []localUser) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st localState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	j := journal{path: filepath.Join(dir, journalFile)}
	users, err := j.replay(st.Epoch, st.Users)
	if err != nil {
		t.Fatal(err)
	}
	journaled, _ := os.ReadFile(j.path)
	return string(raw) + string(journaled), users
}

func TestLocalCreateWalletUser(t *testing.T) {
	tests := []struct {
		validator string
		want      string
	}{
		{validator: "val1", want: "val1_walletuser"},
		{validator: "Val2", want: "val2_walletuser"},
	}
	for _, tt := range tests {
		t.Run(tt.validator, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idp")
			l := openLocal(t, dir)
			got, err := l.CreateWalletUser(context.Background(), tt.validator, "", testPassword(tt.validator))
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if got.Username != tt.want {
				t.Errorf("got username %q, want %q", got.Username, tt.want)
			}
			if _, err := uuid.Parse(got.ID); err != nil {
				t.Errorf("got id %q, want a UUID", got.ID)
			}
			if why := strong(got.TemporaryPassword); why != "" {
				t.Errorf("got a weak password: %s", why)
			}

			raw, users := readUsers(t, dir)
			if len(users) != 1 {
				t.Fatalf("got %d stored users, want 1", len(users))
			}
			u := users[0]
			if u.ID != got.ID || u.Username != tt.want || !u.Temporary || u.CreatedAt.IsZero() {
				t.Errorf("got stored %+v, want id %s, username %s, temporary, createdAt set", u, got.ID, tt.want)
			}
			sum := sha256.Sum256([]byte(got.TemporaryPassword))
			if want := "sha256:" + hex.EncodeToString(sum[:]); u.PasswordHash != want {
				t.Errorf("got hash %q, want %q", u.PasswordHash, want)
			}
			if strings.Contains(raw, got.TemporaryPassword) {
				t.Error("got the clear password in the file, want only its hash")
			}
			for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "users.json"): 0o600} {
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != want {
					t.Errorf("got mode %v for %s, want %v", fi.Mode().Perm(), path, want)
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(dir, ".users.json-*"))
			if len(leftovers) != 0 {
				t.Errorf("got temporary files %v left, want none", leftovers)
			}
		})
	}
}

func TestLocalDuplicate(t *testing.T) {
	tests := []struct {
		name   string
		reopen bool
	}{
		{name: "same process"},
		{name: "after reopen", reopen: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLocal(t, dir)
			if _, err := l.CreateWalletUser(context.Background(), "val1", "", testPassword("val1")); err != nil {
				t.Fatal(err)
			}
			if tt.reopen {
				l = openLocal(t, dir)
			}
			_, err := l.CreateWalletUser(context.Background(), "VAL1", "", testPassword("VAL1"))
			if !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("got error %v, want domain.ErrConflict", err)
			}
			if want := `identity provider user "val1_walletuser" already exists`; err.Error() != want {
				t.Errorf("got %q, want %q", err, want)
			}
			if _, users := readUsers(t, dir); len(users) != 1 {
				t.Errorf("got %d stored users, want 1", len(users))
			}
		})
	}
}

func TestLocalDeleteUser(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir)
	ctx := context.Background()
	a, err := l.CreateWalletUser(ctx, "a", "", testPassword("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.CreateWalletUser(ctx, "b", "", testPassword("b"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   string
		want []string // usernames left, after reopening
	}{
		{name: "existing", id: a.ID, want: []string{"b_walletuser"}},
		{name: "again (idempotent)", id: a.ID, want: []string{"b_walletuser"}},
		{name: "unknown id", id: "no-such-id", want: []string{"b_walletuser"}},
		{name: "empty id", id: "", want: []string{"b_walletuser"}},
		{name: "last one", id: b.ID, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := l.DeleteUser(ctx, tt.id); err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			var got []string
			for _, u := range openLocal(t, dir).users {
				got = append(got, u.Username)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got users %v, want %v", got, tt.want)
			}
		})
	}
	// The name is free again once its user is deleted.
	if _, err := openLocal(t, dir).CreateWalletUser(ctx, "a", "", testPassword("a")); err != nil {
		t.Errorf("got error %v recreating a deleted user, want none", err)
	}
}

func TestLocalConcurrentCreates(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir)
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = l.CreateWalletUser(context.Background(), fmt.Sprintf("v%02d", i), "", testPassword("v"))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	_, users := readUsers(t, dir)
	if len(users) != n {
		t.Fatalf("got %d stored users, want %d", len(users), n)
	}
	seen := map[string]bool{}
	for _, u := range users {
		seen[u.Username] = true
	}
	for i := range n {
		if name := fmt.Sprintf("v%02d_walletuser", i); !seen[name] {
			t.Errorf("got no %s in the file, want every user persisted", name)
		}
	}
}

func TestOpenLocalDamaged(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLocal(dir, LocalOptions{}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("got error %v, want one saying the file is damaged", err)
	}
}

func TestLocalEmptyName(t *testing.T) {
	l := openLocal(t, t.TempDir())
	if _, err := l.CreateWalletUser(context.Background(), "", "", testPassword("")); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("got error %v, want domain.ErrInvalid", err)
	}
}

// breakLocalFile puts a directory where users.json and its journal are,
// so that the next change fails, appended or written whole (even for root,
// which writes through permissions); mendLocalFile removes them.
func breakLocalFile(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{usersFile, journalFile} {
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(path, "blocker"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

func mendLocalFile(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{usersFile, journalFile} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLocalSaveFailure(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir)
	ctx := context.Background()
	a, err := l.CreateWalletUser(ctx, "a", "", testPassword("a"))
	if err != nil {
		t.Fatal(err)
	}
	breakLocalFile(t, dir)

	if _, err := l.CreateWalletUser(ctx, "b", "", testPassword("b")); err == nil || !strings.HasPrefix(err.Error(), `identity provider: create user "b_walletuser"`) {
		t.Errorf("got error %v, want identity provider: create user ...", err)
	}
	if err := l.DeleteUser(ctx, a.ID); err == nil || !strings.HasPrefix(err.Error(), "identity provider: delete user") {
		t.Errorf("got error %v, want identity provider: delete user ...", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".users.json-*"))
	if len(leftovers) != 0 {
		t.Errorf("got temporary files %v left, want none", leftovers)
	}

	// A failed save changes nothing: once the file can be written, b is
	// new and a still exists.
	mendLocalFile(t, dir)
	if _, err := l.CreateWalletUser(ctx, "b", "", testPassword("b")); err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	_, users := readUsers(t, dir)
	if len(users) != 2 || users[0].ID != a.ID || users[1].Username != "b_walletuser" {
		t.Errorf("got users %+v, want a then b", users)
	}
}

// TestLocalCheckPassword: only the user's own password passes; a wrong
// password and an unknown user are refused alike.
func TestLocalCheckPassword(t *testing.T) {
	l := openLocal(t, t.TempDir())
	created, err := l.CreateWalletUser(context.Background(), "acme", "", testPassword("acme"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, username, password string
		wantOK                   bool
	}{
		{"its temporary password", "acme_walletuser", created.TemporaryPassword, true},
		{"a wrong password", "acme_walletuser", created.TemporaryPassword + "x", false},
		{"an empty password", "acme_walletuser", "", false},
		{"an unknown user", "other_walletuser", created.TemporaryPassword, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := l.CheckPassword(context.Background(), tc.username, tc.password)
			if tc.wantOK && (err != nil || id != created.ID) {
				t.Fatalf("got %q, %v, want the user's id %q", id, err, created.ID)
			}
			if !tc.wantOK && !errors.Is(err, &domain.Error{Code: domain.CodeUnauthenticated}) {
				t.Fatalf("got %v, want an unauthenticated error", err)
			}
		})
	}
}

// TestLocalCheckPasswordOfOlderFiles: a users file written when passwords
// were kept as bcrypt hashes still lets its users sign in.
func TestLocalCheckPasswordOfOlderFiles(t *testing.T) {
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("Older-Password-0123456789!"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	file := `{"users":[{"id":"u1","username":"old_walletuser","passwordHash":"` + string(hash) + `","temporary":true,"createdAt":"2026-01-01T00:00:00Z"}]}`
	if err := os.WriteFile(filepath.Join(dir, "users.json"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openLocal(t, dir)
	if id, err := l.CheckPassword(context.Background(), "old_walletuser", "Older-Password-0123456789!"); err != nil || id != "u1" {
		t.Errorf("its password: got %q, %v, want u1", id, err)
	}
	if _, err := l.CheckPassword(context.Background(), "old_walletuser", "Older-Password-0123456789?"); !errors.Is(err, &domain.Error{Code: domain.CodeUnauthenticated}) {
		t.Errorf("a wrong password: got %v, want an unauthenticated error", err)
	}
}
