package sandbox_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// TestDamagedStateIsRefused: a state file whose entries are null or
// incomplete is refused at load, naming the file, the entry and what to do;
// nothing panics later.
func TestDamagedStateIsRefused(t *testing.T) {
	tests := []struct{ name, state, want string }{
		{"null", `null`, "no clientSecret"},
		{"empty object", `{}`, "no clientSecret"},
		{"empty", ``, "unexpected end of JSON input"},
		{"null node", `{"clientSecret":"s","nodes":{"alpha":null}}`, "nodes.alpha is null"},
		{"empty node", `{"clientSecret":"s","nodes":{"alpha":{}}}`, "nodes.alpha lacks"},
		{"null party", `{"clientSecret":"s","nodes":{"alpha":{"fingerprint":"1220ab","operatorUser":"u","operatorParty":"p","parties":{"x":null}}}}`, "nodes.alpha.parties.x is null"},
		{"null user", `{"clientSecret":"s","nodes":{"alpha":{"fingerprint":"1220ab","operatorUser":"u","operatorParty":"p","users":{"u":null}}}}`, "nodes.alpha.users.u is null"},
		{"null hosting", `{"clientSecret":"s","nodes":{},"hosting":{"p::1220":null}}`, "hosting.p::1220 is null"},
		{"damaged token key", `{"clientSecret":"s","nodes":{},"tokenKey":"AAAA"}`, "tokenKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if err := os.WriteFile(path, []byte(tt.state), 0o600); err != nil {
				t.Fatal(err)
			}
			n, err := sandbox.Open(dir, sandbox.Options{})
			if err == nil {
				n.Close()
				t.Fatalf("opened a damaged state, want an error containing %q", tt.want)
			}
			if !errors.Is(err, sandbox.ErrRefused) {
				t.Errorf("got %v, want ErrRefused", err)
			}
			for _, want := range []string{path, tt.want, "restore it from a backup", "--start-afresh=sandbox"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

// TestStateBelongsToItsInstallation: a state of another installation, or a
// missing one where the database expects it, is refused naming the file and
// what to do; a state written before installations were recorded is adopted
// and stamped, and a new one records the installation.
func TestStateBelongsToItsInstallation(t *testing.T) {
	const legacy = `{"clientSecret":"s","synchronizerId":"global-domain::1220ab","nodes":{}}`
	tests := []struct {
		name, state string // state "" writes no file
		expected    bool
		want        string // "" opens
	}{
		{"foreign", `{"installation":"other","clientSecret":"s","nodes":{}}`, false, "belongs to installation other, the database to mine"},
		{"missing where expected", "", true, "is missing, but the database holds validators"},
		{"fresh", "", false, ""},
		{"legacy", legacy, true, ""},
		{"own", `{"installation":"mine","clientSecret":"s","nodes":{}}`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if tt.state != "" {
				if err := os.WriteFile(path, []byte(tt.state), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			n, err := sandbox.Open(dir, sandbox.Options{Installation: "mine", Expected: tt.expected})
			if tt.want != "" {
				if err == nil {
					n.Close()
					t.Fatalf("opened, want an error containing %q", tt.want)
				}
				if !errors.Is(err, sandbox.ErrRefused) {
					t.Errorf("got %v, want ErrRefused", err)
				}
				for _, want := range []string{path, tt.want, "restore it from a backup", "--start-afresh=sandbox"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("got %q, want it to contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n.Close()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var saved struct{ Installation string }
			if err := json.Unmarshal(raw, &saved); err != nil || saved.Installation != "mine" {
				t.Errorf("saved state %s, want the installation recorded", raw)
			}
		})
	}
}
