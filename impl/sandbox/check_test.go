package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/sandbox"
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
			for _, want := range []string{path, tt.want, "restore it from a backup"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want it to contain %q", err, want)
				}
			}
		})
	}
}
