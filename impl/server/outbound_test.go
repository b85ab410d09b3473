package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/management"
	"github.com/validator-manager/validator-manager/impl/outbound"
)

// TestValidatorAddressPolicy: with a cluster's outbound address policy, a
// validator created or edited through release 1.11 with a scanAddress or
// oidcAuthorityUrl the policy refuses is 400 naming the field and the
// policy, and nothing is stored.
func TestValidatorAddressPolicy(t *testing.T) {
	t.Parallel()
	policy := outbound.Cluster("default", []string{"https://kc.example.com/realms/r"}, []string{"scan.example.com", "sv.example.com"}, false, false)
	s := apitest.Start(t, apitest.Options{App: []app.Option{app.With(func(o *management.Options) { o.ValidatorAddresses = policy })}})
	ctx := t.Context()
	tests := []struct {
		name, scan, authority, field string
	}{
		{"scan at the metadata address", "https://169.254.169.254/latest", "", "clusterConfig.scanAddress"},
		{"scan over http", "http://scan.example.com", "", "clusterConfig.scanAddress"},
		{"scan elsewhere", "https://attacker.example.org", "", "clusterConfig.scanAddress"},
		{"token endpoint elsewhere", "https://scan.example.com", "https://attacker.example.org/realms/r", "auth.oidcAuthorityUrl"},
		{"token endpoint on loopback", "https://scan.example.com", "https://127.0.0.1:8080/realms/r", "auth.oidcAuthorityUrl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := validValidator()
			v.ClusterConfig.ScanAddress = tt.scan
			if tt.authority != "" {
				v.Auth = &managementapi.ValidatorAuthDto{Audience: "https://ledger.example.com", LedgerApiClientId: "c", LedgerApiClientSecret: ptr("s"), OidcAuthorityUrl: ptr(tt.authority),
					CnsClientId: "cns", LedgerApiUser: "u", WalletClientId: "w", WalletUser: "wu"}
				v.CustomAuth = ptr(true)
			}
			r, err := s.Management.CreateValidatorWithResponse(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			if r.StatusCode() != http.StatusBadRequest || !strings.Contains(string(r.Body), tt.field) || !strings.Contains(string(r.Body), "outbound address policy") {
				t.Fatalf("got %d %s, want 400 naming %s and the policy", r.StatusCode(), r.Body, tt.field)
			}
			if _, err := s.App.Store.GetValidator(ctx, v.Name); err == nil {
				t.Fatal("the refused validator was stored")
			}
		})
	}
	if r, err := s.Management.CreateValidatorWithResponse(ctx, validValidator()); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("allowed scanAddress: got %d %s", r.StatusCode(), r.Body)
	}
}
