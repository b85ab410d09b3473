package etag_test

import (
	"testing"

	"github.com/validator-manager/validator-manager/impl/etag"
)

func TestOf(t *testing.T) {
	a, b := etag.Of("1", "x"), etag.Of("1", "x")
	if a != b {
		t.Fatalf("same parts: got %s and %s, want equal", a, b)
	}
	// Parts are separated: ("1", "2x") is not ("12", "x").
	for _, other := range []string{etag.Of("2", "x"), etag.Of("1", "y"), etag.Of("12", ""), etag.Of("1x")} {
		if other == a {
			t.Errorf("different parts give %s, the tag of (1, x)", other)
		}
	}
	if a[0] != '"' || a[len(a)-1] != '"' {
		t.Errorf("got %s, want a quoted (strong) tag", a)
	}
}

func TestMatch(t *testing.T) {
	tag := etag.Of("v")
	for _, c := range []struct {
		header string
		want   bool
	}{
		{tag, true},
		{"*", true},
		{`"other", ` + tag, true},
		{"W/" + tag, true},
		{`"other"`, false},
		{"", false},
		{tag[1 : len(tag)-1], false}, // unquoted
	} {
		if got := etag.Match(c.header, tag); got != c.want {
			t.Errorf("Match(%q): got %v, want %v", c.header, got, c.want)
		}
	}
}
