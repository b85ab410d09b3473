package apitest_test

import (
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestParseImageReference(t *testing.T) {
	tests := []struct {
		ref string
		ok  bool
	}{
		{domain.ImageReference("ghcr.io/digital-asset/decentralized-canton-sync/docker", domain.ImageParticipant, "0.4.2"), true},
		{"registry.example.test:5000/splice/validator-app:0.5.1-rc.1", true},
		{"postgres:14", true},
		{"registry.example.test:5000/splice/validator-app", false},
		{"registry.example.test/splice/validator-app:", false},
		{"registry.example.test/splice/validator-app:-x", false},
		{"registry.example.test/Splice/validator-app:1", false},
		{"registry.example.test/splice/validator-app:1:2", false},
	}
	for _, tc := range tests {
		err := apitest.ParseImageReference(tc.ref)
		if (err == nil) != tc.ok {
			t.Errorf("ParseImageReference(%q) = %v, want ok %t", tc.ref, err, tc.ok)
		}
	}
}
