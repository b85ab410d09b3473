package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// provisionedOf is the Provisioned condition's status and reason in a 2.0
// event's data ("" when it has none).
func provisionedOf(t *testing.T, data string) (status, reason string) {
	t.Helper()
	var e struct {
		Status struct {
			Conditions []struct{ Type, Status, Reason string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		t.Fatalf("event data %s: %v", data, err)
	}
	for _, c := range e.Status.Conditions {
		if c.Type == "Provisioned" {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

// TestWatchShowsProvisioningFailure: a wallet user of the validator's name
// made elsewhere shows on release 2.0's stream as the Provisioned condition
// (False, WalletUserConflict) while release 1.11's events keep their fields
// and PENDING; once the user is removed the condition turns True.
func TestWatchShowsProvisioningFailure(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{Watch: true})
	ctx := context.Background()
	other, err := s.App.Identity.CreateWalletUser(ctx, "omega", "", "Someone-elses-Pa55word")
	if err != nil {
		t.Fatal(err)
	}
	const v1, v2 = "/api/watch/validators", "/api/v1/watch/validators"
	m := openWatch(t, s, v1+"?name=omega", nil)
	p := openWatch(t, s, v2+"?name=omega", nil)
	if r, err := s.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("omega")); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", err, r)
	}
	failed := p.until("2.0: Provisioned False WalletUserConflict", func(e apitest.Event) bool {
		status, reason := provisionedOf(t, e.Data)
		return status == "False" && reason == "WalletUserConflict"
	})
	if strings.Contains(failed.Data, "Pa55word") || !strings.Contains(failed.Data, "omega_walletuser") {
		t.Fatalf("event %s: want the user named and no password", failed.Data)
	}
	if ph := phaseOf(t, failed.Data); ph != "" && ph != "PENDING" {
		t.Fatalf("phase %s, want PENDING", ph)
	}
	e := m.until("1.11: omega", func(e apitest.Event) bool { return e.Name == "validator" })
	if !strings.Contains(e.Data, `"phase":"PENDING"`) || strings.Contains(e.Data, "Provisioned") {
		t.Fatalf("1.11 event %s: want PENDING and its own fields only", e.Data)
	}
	if err := s.App.Identity.(interface {
		DeleteUser(context.Context, string) error
	}).DeleteUser(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	p.until("2.0: Provisioned True", func(e apitest.Event) bool {
		status, reason := provisionedOf(t, e.Data)
		return status == "True" && reason == "Provisioned"
	})
}
