package store

import (
	"errors"
	"testing"
)

// TestTranslateNamesOnce: an unexpected error translated in a transaction
// and again after it names its row once, and still wraps the cause.
func TestTranslateNamesOnce(t *testing.T) {
	cause := errors.New("constraint failed: CHECK")
	err := translate(translate(cause, `validator "x"`, ""), `validator "x"`, "")
	if got, want := err.Error(), `validator "x": constraint failed: CHECK`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Fatal("the translated error no longer wraps its cause")
	}
}
