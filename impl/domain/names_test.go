package domain_test

import (
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestKeyName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"rp-1", true},
		{"bob smith", true},
		{"Zoë", true},
		{"a/b", false},
		{`a\b`, false},
		{"..", false},
		{".", false},
		{"a..b", true},
		{"a\u200bb", false}, // zero-width space
		{"a\u202eb", false}, // right-to-left override
		{"a\u2066b", false}, // left-to-right isolate
		{"a\tb", false},
		{"a\u2028b", false}, // line separator
	}
	for _, tt := range tests {
		if got := domain.KeyName("name", tt.name) == nil; got != tt.ok {
			t.Errorf("KeyName(%q): got ok=%v, want %v", tt.name, got, tt.ok)
		}
	}
}

func TestPort(t *testing.T) {
	for port, ok := range map[string]bool{"1": true, "6865": true, "65535": true, "0": false, "65536": false, "x": false, "": false, "-1": false, "080": false, " 80": false} {
		if got := domain.Port("adminPort", port) == nil; got != ok {
			t.Errorf("Port(%q): got ok=%v, want %v", port, got, ok)
		}
	}
}

func TestHost(t *testing.T) {
	for host, ok := range map[string]bool{
		"127.0.0.9": true, "::1": true, "[::1]": true, "participant.partner.example.test": true, "rp_1.test": true, "localhost": true, "rp.test.": true,
		"": false, "http://rp.test": false, "rp.test:5002": false, "rp.test/x": false, "user@rp.test": false, "a b.test": false,
		"-rp.test": false, "rp..test": false, ".": false, "ráp.test": false, strings.Repeat("a", 64) + ".test": false,
	} {
		if got := domain.Host("adminAddress", host) == nil; got != ok {
			t.Errorf("Host(%q): got ok=%v, want %v", host, got, ok)
		}
	}
}
