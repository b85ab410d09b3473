package platform_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/controller/gateway"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// Credentials sent in the tests: no response, log line or audit row may
// ever contain them.
const (
	testAPIKey    = "key-AKIA7EXAMPLEKEY"
	testAPISecret = "-----BEGIN PRIVATE KEY-----secret-MIIEvQIBADANBg-----END PRIVATE KEY-----"
)

func TestWalletGateway(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	createValidator(t, s)
	ctx := t.Context()
	var bodies []string // every response body, checked for credentials at the end
	keep := func(b []byte) []byte { bodies = append(bodies, string(b)); return b }

	settings := func(t *testing.T) platformapi.CustodyProviderSettings {
		t.Helper()
		r, err := s.Platform.GetCustodyProviderSettingsWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "get settings", r.StatusCode(), keep(r.Body), http.StatusOK)
		return *r.JSON200
	}
	update := func(t *testing.T, body platformapi.UpdateCustodyProviderSettingsRequest, want int) *platformapi.UpdateCustodyProviderSettingsResponse {
		t.Helper()
		r, err := s.Platform.UpdateCustodyProviderSettingsWithResponse(ctx, validator, body)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "update settings", r.StatusCode(), keep(r.Body), want)
		return r
	}
	create := func(t *testing.T, name string, body platformapi.CreateGatewayWalletRequest, want int) *platformapi.CreateGatewayWalletResponse {
		t.Helper()
		r, err := s.Platform.CreateGatewayWalletWithResponse(ctx, name, body)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "create wallet", r.StatusCode(), keep(r.Body), want)
		return r
	}
	provider := platformapi.SigningProviderCustodyProviderA

	t.Run("nothing configured", func(t *testing.T) {
		got := settings(t)
		if got.Enabled || got.CredentialsConfigured || got.BaseUrl != nil || got.UpdatedAt != nil || got.Provider != provider {
			t.Fatalf("settings of an unconfigured provider: %+v", got)
		}
		r, err := s.Platform.ListGatewayWalletsWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "list", r.StatusCode(), keep(r.Body), http.StatusOK)
		if len(*r.JSON200) != 0 {
			t.Fatalf("wallets: %s", r.Body)
		}
		create(t, validator, platformapi.CreateGatewayWalletRequest{PartyHint: "early", SigningProvider: provider}, http.StatusConflict)
	})

	t.Run("update takes effect at once", func(t *testing.T) {
		before, err := s.Kube.Validators().Get(ctx, validator, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		base := "https://custody-a.test/api"
		r := update(t, platformapi.UpdateCustodyProviderSettingsRequest{Enabled: ptr(true), BaseUrl: &base,
			Credentials: &platformapi.CustodyProviderCredentials{ApiKey: ptr(testAPIKey), ApiSecret: ptr(testAPISecret)}}, http.StatusOK)
		if got := r.JSON200; !got.Enabled || !got.CredentialsConfigured || got.BaseUrl == nil || *got.BaseUrl != base || got.UpdatedAt == nil {
			t.Fatalf("after update: %s", r.Body)
		}
		if got := settings(t); !got.Enabled || !got.CredentialsConfigured {
			t.Fatalf("read after update: %+v", got)
		}
		// Only what is sent changes.
		r = update(t, platformapi.UpdateCustodyProviderSettingsRequest{Enabled: ptr(false)}, http.StatusOK)
		if got := r.JSON200; got.Enabled || !got.CredentialsConfigured || got.BaseUrl == nil || *got.BaseUrl != base {
			t.Fatalf("partial update: %s", r.Body)
		}
		update(t, platformapi.UpdateCustodyProviderSettingsRequest{Enabled: ptr(true)}, http.StatusOK)
		after, err := s.Kube.Validators().Get(ctx, validator, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if before.GetResourceVersion() != after.GetResourceVersion() {
			t.Fatalf("the Validator resource changed (%s -> %s)", before.GetResourceVersion(), after.GetResourceVersion())
		}
		// The leader writes what was recorded into the gateway's Secret.
		apitest.Eventually(t, 30*time.Second, "the wallet gateway's Secret", func() error {
			sec, err := s.Kube.Core.CoreV1().Secrets(s.Kube.Namespace).Get(ctx, gateway.SecretName(validator), metav1.GetOptions{})
			if err != nil {
				return err
			}
			var st struct {
				Enabled bool   `json:"enabled"`
				BaseURL string `json:"baseUrl"`
			}
			if err := json.Unmarshal(sec.Data[gateway.SettingsKey], &st); err != nil || !st.Enabled || st.BaseURL != base {
				return fmt.Errorf("settings.json %s (%v)", sec.Data[gateway.SettingsKey], err)
			}
			if !strings.Contains(string(sec.Data[gateway.CredentialsKey]), testAPIKey) {
				return fmt.Errorf("credentials not stored in the Secret")
			}
			return nil
		})
	})

	t.Run("wallets", func(t *testing.T) {
		vault := "vault-7"
		a := create(t, validator, platformapi.CreateGatewayWalletRequest{PartyHint: "alice", SigningProvider: provider, Primary: ptr(true), Vault: &vault}, http.StatusOK).JSON200
		if !a.Primary || a.PartyHint != "alice" || !strings.HasPrefix(a.PartyId, "alice::") || a.Vault == nil || *a.Vault != vault || a.WalletId == "" {
			t.Fatalf("created: %+v", a)
		}
		b := create(t, validator, platformapi.CreateGatewayWalletRequest{PartyHint: "bob", SigningProvider: provider, Primary: ptr(true)}, http.StatusOK).JSON200
		create(t, validator, platformapi.CreateGatewayWalletRequest{PartyHint: "alice", SigningProvider: provider}, http.StatusConflict)
		r, err := s.Platform.ListGatewayWalletsWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "list", r.StatusCode(), keep(r.Body), http.StatusOK)
		got := *r.JSON200
		if len(got) != 2 || got[0].WalletId != a.WalletId || got[0].Primary || got[1].WalletId != b.WalletId || !got[1].Primary {
			t.Fatalf("wallets (alice demoted, bob primary): %s", r.Body)
		}
		// A create recorded whose party was allocated but not recorded (a
		// crash in between) is finished by a retry, which adopts the party.
		rec := domain.GatewayWallet{WalletID: "wallet-crashed", Validator: validator, PartyHint: "carol", SigningProvider: string(provider)}
		if err := s.App.Store.RecordWallet(ctx, &rec); err != nil {
			t.Fatal(err)
		}
		ar, err := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: "carol"})
		if err != nil || ar.StatusCode() != http.StatusOK {
			t.Fatalf("allocate carol: %v %s", err, ar.Body)
		}
		if r, err := s.Platform.ListGatewayWalletsWithResponse(ctx, validator); err != nil || strings.Contains(string(r.Body), "carol") {
			t.Fatalf("a wallet whose party is not recorded is listed: %v %s", err, r.Body)
		}
		c := create(t, validator, platformapi.CreateGatewayWalletRequest{PartyHint: "carol", SigningProvider: provider}, http.StatusOK).JSON200
		if c.WalletId != "wallet-crashed" || !strings.HasPrefix(c.PartyId, "carol::") || !strings.Contains(string(ar.Body), c.PartyId) {
			t.Fatalf("resumed wallet: %+v, allocated %s", c, ar.Body)
		}
		create(t, validator, platformapi.CreateGatewayWalletRequest{PartyHint: "carol", SigningProvider: provider}, http.StatusConflict)
		// The party exists on the validator's ledger.
		pr, err := s.Platform.ListPartiesWithResponse(ctx, validator, &platformapi.ListPartiesParams{PartyId: &a.PartyId})
		if err != nil || pr.StatusCode() != http.StatusOK || !strings.Contains(string(pr.Body), a.PartyId) {
			t.Fatalf("party of the wallet on the ledger: %v %s", err, pr.Body)
		}
	})

	t.Run("errors", func(t *testing.T) {
		raw := func(method, path, body string) (int, []byte) {
			req, _ := http.NewRequestWithContext(ctx, method, s.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+s.Token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b json.RawMessage
			_ = json.NewDecoder(resp.Body).Decode(&b)
			return resp.StatusCode, keep(b)
		}
		settingsPath := "/api/v1/validators/" + validator + "/wallet-gateway/providers/custody-provider-a"
		walletsPath := "/api/v1/validators/" + validator + "/wallet-gateway/wallets"
		tests := []struct {
			name, method, path, body string
			want                     int
		}{
			{"unknown validator, read", http.MethodGet, "/api/v1/validators/nope/wallet-gateway/providers/custody-provider-a", "", http.StatusNotFound},
			{"unknown validator, update", http.MethodPut, "/api/v1/validators/nope/wallet-gateway/providers/custody-provider-a", `{"enabled":true}`, http.StatusNotFound},
			{"unknown validator, list", http.MethodGet, "/api/v1/validators/nope/wallet-gateway/wallets", "", http.StatusNotFound},
			{"unknown validator, create", http.MethodPost, "/api/v1/validators/nope/wallet-gateway/wallets", `{"partyHint":"x","signingProvider":"custody-provider-a"}`, http.StatusNotFound},
			{"half a credential", http.MethodPut, settingsPath, `{"credentials":{"apiKey":"` + testAPIKey + `"}}`, http.StatusBadRequest},
			{"empty secret", http.MethodPut, settingsPath, `{"credentials":{"apiKey":"` + testAPIKey + `","apiSecret":""}}`, http.StatusBadRequest},
			{"baseUrl not a URI", http.MethodPut, settingsPath, `{"baseUrl":"not a url"}`, http.StatusBadRequest},
			// Credentials are write-only: a URL carrying them would be read back.
			{"baseUrl with credentials", http.MethodPut, settingsPath, `{"baseUrl":"https://` + testAPIKey + `:secret-MIIEvQ@custody-a.test/api"}`, http.StatusBadRequest},
			{"baseUrl with a user", http.MethodPut, settingsPath, `{"baseUrl":"https://` + testAPIKey + `@custody-a.test/api"}`, http.StatusBadRequest},
			{"enabled not a boolean", http.MethodPut, settingsPath, `{"enabled":"yes"}`, http.StatusBadRequest},
			{"unknown provider", http.MethodPost, walletsPath, `{"partyHint":"x","signingProvider":"custody-provider-b"}`, http.StatusBadRequest},
			{"no party hint", http.MethodPost, walletsPath, `{"signingProvider":"custody-provider-a"}`, http.StatusBadRequest},
			{"empty party hint", http.MethodPost, walletsPath, `{"partyHint":"","signingProvider":"custody-provider-a"}`, http.StatusBadRequest},
			// The hint is allocated as a participant-managed party's: a hint
			// the ledger refuses is refused before anything is recorded.
			{"party hint with ::", http.MethodPost, walletsPath, `{"partyHint":"a::b","signingProvider":"custody-provider-a"}`, http.StatusBadRequest},
			{"party hint not in the ledger's syntax", http.MethodPost, walletsPath, `{"partyHint":"héllo","signingProvider":"custody-provider-a"}`, http.StatusBadRequest},
			{"party hint of 186 characters", http.MethodPost, walletsPath, `{"partyHint":"` + strings.Repeat("p", 186) + `","signingProvider":"custody-provider-a"}`, http.StatusBadRequest},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got, b := raw(tt.method, tt.path, tt.body); got != tt.want {
					t.Fatalf("got %d %s, want %d", got, b, tt.want)
				}
			})
		}
		// A refused update changed nothing.
		if got := settings(t); !got.Enabled || !got.CredentialsConfigured || got.BaseUrl == nil || *got.BaseUrl != "https://custody-a.test/api" {
			t.Fatalf("after refused updates: %+v", got)
		}
		// A refused create recorded nothing.
		ws, err := s.App.Store.GatewayWallets(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if w.PartyID == "" {
				t.Fatalf("a refused create left a wallet record: %+v", w)
			}
		}
	})

	t.Run("credentials never leave", func(t *testing.T) {
		entries, err := s.App.Store.FindAudit(ctx, domain.AuditFilter{Page: domain.Page{Limit: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		audited := 0
		for _, e := range entries {
			row, _ := json.Marshal(e)
			bodies = append(bodies, string(row))
			if e.Operation == "updateCustodyProviderSettings" {
				audited++
			}
		}
		if audited == 0 {
			t.Fatal("no audit row of updateCustodyProviderSettings")
		}
		bodies = append(bodies, s.Logs())
		// At rest they are sealed.
		gw, err := s.App.Store.WalletGateway(ctx, validator)
		if err != nil || gw.Credentials == "" {
			t.Fatalf("recorded gateway: %v, credentials %t", err, gw.Credentials != "")
		}
		bodies = append(bodies, gw.Credentials)
		for _, b := range bodies {
			for _, secret := range []string{testAPIKey, testAPISecret, "secret-MIIEvQ"} {
				if strings.Contains(b, secret) {
					t.Fatalf("a credential leaked into %q", b)
				}
			}
		}
	})
}
