package sandbox

import (
	"maps"
	"strings"
	"testing"
)

// TestReadManifest: CRLF lines, values trimmed, a leading space continues
// the previous value (as the Daml assistant wraps Dalfs at 72 bytes).
func TestReadManifest(t *testing.T) {
	mf := "Manifest-Version: 1.0\r\nMain-Dalf: pkg-1.0.0/pkg-1.0.0-ab\r\n cd.dalf\r\nDalfs: a.dalf, b\r\n .dalf\r\n\r\n"
	got := map[string]string{}
	readManifest(strings.NewReader(mf), got)
	want := map[string]string{"Manifest-Version": "1.0", "Main-Dalf": "pkg-1.0.0/pkg-1.0.0-abcd.dalf", "Dalfs": "a.dalf, b.dalf"}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
