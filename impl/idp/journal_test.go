package idp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// epochOf is the epoch of the users file in dir.
func epochOf(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, usersFile))
	if err != nil {
		t.Fatal(err)
	}
	var st localState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return st.Epoch
}

// TestLocalJournal: a change appends one line to the journal and leaves
// the users file as it is, until the journal holds as many entries as the
// threshold, when the file is written whole under a new epoch; a reopen
// sees every change either way.
func TestLocalJournal(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir)
	l.journal.compactAfter = 4
	ctx := context.Background()
	first := epochOf(t, dir)
	var ids []string
	for i := range 4 {
		u, err := l.CreateWalletUser(ctx, fmt.Sprint("v", i), "", testPassword(fmt.Sprint("v", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
		if got := epochOf(t, dir); got != first {
			t.Fatalf("change %d wrote the file whole (epoch %s, was %s); want it appended", i+1, got, first)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, journalFile))
	if lines := strings.Count(string(raw), "\n"); lines != 5 {
		t.Errorf("journal has %d lines, want the header and 4 changes", lines)
	}
	if err := l.DeleteUser(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if got := epochOf(t, dir); got == first {
		t.Error("the fifth change appended; want the file written whole")
	}
	if _, users := readUsers(t, dir); len(users) != 3 {
		t.Errorf("stored users %d, want 3", len(users))
	}
	if err := l.DeleteUser(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	again := openLocal(t, dir)
	for i, id := range ids {
		if got, want := again.HasUser(id), i >= 2; got != want {
			t.Errorf("reopened: user %d present %v, want %v", i, got, want)
		}
	}
}

// TestLocalJournalReplay: what a reopen takes from the journal. A last
// line cut short by a kill is left out (it was never acknowledged); a
// journal of another epoch (the file was written whole since, or restored
// from a backup) is not replayed; a damaged line before the end is refused.
func TestLocalJournalReplay(t *testing.T) {
	setup := func(t *testing.T) (string, string) {
		dir := t.TempDir()
		l := openLocal(t, dir)
		if _, err := l.CreateWalletUser(context.Background(), "a", "", testPassword("a")); err != nil {
			t.Fatal(err)
		}
		return dir, filepath.Join(dir, journalFile)
	}
	appendTo := func(t *testing.T, path, text string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("cut short", func(t *testing.T) {
		dir, path := setup(t)
		appendTo(t, path, `{"add":{"id":"torn","username":"b_wall`)
		l := openLocal(t, dir)
		if !l.HasUser(mustUserID(t, l, "a_walletuser")) || l.HasUser("torn") {
			t.Error("want a, and not the line cut short")
		}
	})
	t.Run("another epoch", func(t *testing.T) {
		dir, path := setup(t)
		if err := os.WriteFile(path, []byte(`{"epoch":"older"}`+"\n"+`{"add":{"id":"stale","username":"s_walletuser"}}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if l := openLocal(t, dir); l.HasUser("stale") {
			t.Error("replayed a journal of another epoch")
		}
	})
	t.Run("damaged", func(t *testing.T) {
		dir, path := setup(t)
		appendTo(t, path, "{not json\n")
		_, err := OpenLocal(dir, LocalOptions{})
		if err == nil || !strings.Contains(err.Error(), "users.journal is damaged") || !strings.Contains(err.Error(), "--start-afresh=idp") {
			t.Errorf("got %v, want the journal refused as damaged", err)
		}
	})
}

func mustUserID(t *testing.T, l *Local, username string) string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range l.users {
		if u.Username == username {
			return u.ID
		}
	}
	t.Fatalf("no user %s", username)
	return ""
}
