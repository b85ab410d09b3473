package domain_test

import (
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
