package idp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestLocalSharedDirectory: two providers on one directory (replicas on
// one data directory, either of which may lead) answer what the other
// wrote, and neither loses the other's writes: not to appends made at
// once, a compaction of the journal, a client change or a Ping that
// writes the file whole, nor a reopen.
func TestLocalSharedDirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := openLocal(t, dir), openLocal(t, dir)
	both := []*Local{a, b}
	for _, l := range both {
		l.journal.compactAfter = 4
	}
	ctx := context.Background()

	one, err := a.CreateWalletUser(ctx, "one", "", testPassword("one"))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := b.CheckPassword(ctx, "one_walletuser", one.TemporaryPassword); err != nil || id != one.ID || !b.HasUser(one.ID) {
		t.Errorf("the other provider: got %q, %v, want the user created through the first (%s)", id, err, one.ID)
	}
	if err := b.DeleteUser(ctx, one.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CheckPassword(ctx, "one_walletuser", one.TemporaryPassword); a.HasUser(one.ID) || !errors.Is(err, &domain.Error{Code: domain.CodeUnauthenticated}) {
		t.Errorf("the first provider after the other deleted the user: got %v, want it gone", err)
	}

	// Creates through both at once, over several compactions.
	ids := make([][]string, len(both))
	var wg sync.WaitGroup
	for i, l := range both {
		wg.Go(func() {
			for n := range 10 {
				v := fmt.Sprintf("r%d-%d", i, n)
				u, err := l.CreateWalletUser(ctx, v, "", testPassword(v))
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = append(ids[i], u.ID)
			}
		})
	}
	wg.Wait()
	// Clients are written whole, with the users as stored.
	if _, err := b.ProvisionClients(ctx, "app", "claim"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateWalletUser(ctx, "last", "", testPassword("last")); err != nil {
		t.Fatal(err)
	}
	// A process killed in the middle of an append leaves the journal's
	// last line cut short: the next Ping writes the file whole.
	f, err := os.OpenFile(filepath.Join(dir, journalFile), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"add":{"id":"torn"`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := epochOf(t, dir)
	if err := b.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if epochOf(t, dir) == before {
		t.Error("Ping left the file as it was; want it written whole")
	}

	want := append(append([]string{mustUserID(t, a, "last_walletuser")}, ids[0]...), ids[1]...)
	if _, stored := readUsers(t, dir); len(stored) != len(want) {
		t.Errorf("stored users %d, want %d", len(stored), len(want))
	}
	for name, l := range map[string]*Local{"first": a, "other": b, "reopened": openLocal(t, dir)} {
		for _, id := range want {
			if !l.HasUser(id) {
				t.Errorf("%s provider: user %s missing", name, id)
			}
		}
		if !l.HasClient(LedgerAPIClientID("app")) {
			t.Errorf("%s provider: client missing", name)
		}
	}
}
