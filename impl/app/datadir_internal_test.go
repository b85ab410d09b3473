package app

import (
	"strings"
	"testing"
)

// TestCheckNewDatabase: a database without an installation beside stores
// that record one is refused, naming the database, each such store and the
// flag that begins a new installation; stores started afresh do not count.
func TestCheckNewDatabase(t *testing.T) {
	users := claim{store: "idp", where: "data/idp/users.json", installation: "old"}
	state := claim{store: "sandbox", where: "data/sandbox/state.json", installation: "old"}
	legacy := claim{store: "sandbox", where: "data/sandbox/state.json"}
	tests := []struct {
		name     string
		recorded string
		claims   []claim
		afresh   string
		want     []string // nil: accepted
	}{
		{"fresh data directory", "", []claim{{store: "idp", where: "u"}, {store: "sandbox", where: "s"}}, "", nil},
		{"database of the stores", "old", []claim{users, state}, "", nil},
		{"legacy files", "", []claim{legacy}, "", nil},
		{"emptied database", "", []claim{users, state}, "", []string{"database data/vm.db records no installation", "data/idp/users.json (installation old)", "data/sandbox/state.json (installation old)", "--start-afresh=idp,sandbox"}},
		{"one store started afresh", "", []claim{users, state}, "idp", []string{"data/sandbox/state.json", "--start-afresh=sandbox"}},
		{"every store started afresh", "", []claim{users, state}, "idp,sandbox", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkNewDatabase("database data/vm.db", tt.recorded, tt.claims, func(s string) bool { return strings.Contains(tt.afresh, s) })
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got %v, want an error containing %q", err, want)
				}
			}
		})
	}
}

// TestCheckClusterRecord: the control plane's installation record is
// written when new, legacy or started afresh, and a cluster of another
// installation, or a new one beside a database with validators, is refused.
func TestCheckClusterRecord(t *testing.T) {
	tests := []struct {
		name                      string
		present                   bool
		recorded                  string
		validators, fresh, afresh bool
		write                     bool
		want                      string // "" accepted
	}{
		{"fresh data directory", false, "", false, true, false, true, ""},
		{"its own", true, "mine", true, false, false, false, ""},
		{"legacy cluster", false, "", true, false, false, true, ""},
		{"emptied etcd", false, "", true, true, false, false, "is empty (a new cluster), but the database holds validators"},
		{"emptied etcd afresh", false, "", true, true, true, true, ""},
		{"another installation's", true, "other", false, false, false, false, "belongs to installation other, the database to mine"},
		{"another installation's afresh", true, "other", true, false, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write, err := checkClusterRecord("the etcd", tt.present, tt.recorded, "mine", tt.validators, tt.fresh, tt.afresh)
			if tt.want == "" {
				if err != nil || write != tt.write {
					t.Fatalf("got write %v, %v; want write %v, no error", write, err, tt.write)
				}
				return
			}
			for _, want := range []string{"the etcd", tt.want, "--start-afresh=cluster"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got %v, want an error containing %q", err, want)
				}
			}
		})
	}
}
