package charts

import "testing"

// A registry on a loopback address is spoken to over plain HTTP, any other
// over HTTPS.
func TestLoopback(t *testing.T) {
	for ref, want := range map[string]bool{
		"127.0.0.1:5000/charts":        true,
		"127.5.6.7/charts":             true,
		"[::1]:5000/charts":            true,
		"localhost:5000/charts":        true,
		"localhost/charts":             true,
		"ghcr.io/digital-asset/helm":   false,
		"registry.test:5000/charts":    false,
		"localhost.example.test/chart": false,
		"[::2]:5000/charts":            false,
		"128.0.0.1/charts":             false,
	} {
		if got := loopback(ref); got != want {
			t.Errorf("loopback(%s) = %t, want %t", ref, got, want)
		}
	}
}
