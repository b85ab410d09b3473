package domain_test

import (
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestCheckImageRepo(t *testing.T) {
	tests := []struct {
		repo string
		ok   bool
	}{
		{"ghcr.io/digital-asset/decentralized-canton-sync/docker", true},
		{"registry.example.test:5000/splice", true},
		{"localhost/splice", true},
		{"splice", true},
		{"ghcr.io/digital-asset/decentralized-canton-sync/docker/validator-app", false},
		{"registry.example.test/splice/canton-participant", false},
		{"registry.example.test/wallet-web-ui", false},
		{"ans-web-ui", false},
		{"registry.example.test/splice:0.4.2", false},
		{"registry.example.test/Splice", false},
		{"registry.example.test/splice/", false},
		{"registry.example.test//splice", false},
		{"https://registry.example.test/splice", false},
		{"registry.example.test/" + strings.Repeat("a", 240), false},
	}
	for _, tc := range tests {
		err := domain.CheckImageRepo(tc.repo)
		if (err == nil) != tc.ok {
			t.Errorf("CheckImageRepo(%q) = %v, want ok %t", tc.repo, err, tc.ok)
		}
	}
}

func TestCheckImageTag(t *testing.T) {
	for _, tag := range []string{"0.4.2", "latest", "v1_2"} {
		if err := domain.CheckImageTag(tag); err != nil {
			t.Errorf("CheckImageTag(%q) = %v", tag, err)
		}
	}
	for _, tag := range []string{"", ".1", "a b", strings.Repeat("1", 129)} {
		if domain.CheckImageTag(tag) == nil {
			t.Errorf("CheckImageTag(%q) accepted", tag)
		}
	}
}
