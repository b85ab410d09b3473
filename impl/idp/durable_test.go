package idp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenLocalRefusesWhatContradicts: a users file that is empty, null,
// without its users or of another installation is refused at open, naming
// the file and what to do; a missing file starts afresh and a file written
// before installations were recorded is adopted.
func TestOpenLocalRefusesWhatContradicts(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"missing where expected", "-", "is missing, but the database holds validators"},
		{"empty", "", "damaged"},
		{"null", "null", "empty, null or not a users file"},
		{"empty object", "{}", "empty, null or not a users file"},
		{"foreign", `{"installation":"other","users":[]}`, "belongs to installation other, the database to mine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "users.json")
			if tt.content != "-" {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := OpenLocal(dir, LocalOptions{Installation: "mine", Expected: true})
			if !errors.Is(err, ErrRefused) {
				t.Errorf("got %v, want ErrRefused", err)
			}
			for _, want := range []string{path, tt.want, "restore it from a backup", "--start-afresh=idp"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got %v, want an error containing %q", err, want)
				}
			}
		})
	}
	fresh := t.TempDir()
	if _, err := OpenLocalFor(fresh, "mine"); err != nil {
		t.Errorf("fresh directory: %v", err)
	}
	if raw, _ := readUsers(t, fresh); !strings.Contains(raw, `"installation": "mine"`) {
		t.Errorf("fresh directory: file %q, want it written at open with the installation", raw)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.json"), []byte(`{"users":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenLocalFor(dir, "mine")
	if err != nil {
		t.Fatalf("a file without installation: %v", err)
	}
	if raw, _ := readUsers(t, dir); !strings.Contains(raw, `"installation": "mine"`) || !strings.Contains(raw, `"users": []`) {
		t.Errorf("saved file %s, want the installation and an empty users list", raw)
	}
}

// TestLocalPing: the provider's health is DOWN while its file cannot be
// written and UP again when it can.
func TestLocalPing(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir)
	ctx := context.Background()
	if err := l.Ping(ctx); err != nil {
		t.Fatalf("writable: %v", err)
	}
	breakLocalFile(t, dir)
	if err := l.Ping(ctx); err == nil || !strings.Contains(err.Error(), "users.json cannot be written") {
		t.Fatalf("unwritable: got %v, want an error naming the file", err)
	}
	mendLocalFile(t, dir)
	if err := l.Ping(ctx); err != nil {
		t.Fatalf("writable again: %v", err)
	}
}
