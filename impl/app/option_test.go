package app_test

import (
	"testing"

	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/server"
)

// TestWithRefusesUnbuiltParts: an option for a type no part is built from
// would be ignored; it panics instead.
func TestWithRefusesUnbuiltParts(t *testing.T) {
	_ = app.With(func(*server.Options) {}) // a part's: accepted
	defer func() {
		if recover() == nil {
			t.Fatal("app.With of config.Config, which no part is built from, was accepted")
		}
	}()
	_ = app.With(func(*config.Config) {})
}
