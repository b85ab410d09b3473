package gateway_test

import (
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/controller/gateway"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The Secret keeps the layout a wallet gateway in the cluster reads:
// settings without credentials, the credentials apart (only when set), and
// only the wallets whose party is recorded.
func TestSecretData(t *testing.T) {
	at := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
	done := domain.GatewayWallet{WalletID: "w-1", Validator: "v", PartyHint: "alice", PartyID: "alice::12", SigningProvider: "custody-provider-a", Primary: true, Vault: "v7", CreatedAt: at}
	pending := domain.GatewayWallet{WalletID: "w-2", Validator: "v", PartyHint: "bob", SigningProvider: "custody-provider-a", CreatedAt: at}
	tests := []struct {
		name    string
		gw      domain.WalletGateway
		wallets []domain.GatewayWallet
		creds   *domain.CustodyCredentials
		want    map[string]string
	}{
		{"nothing set", domain.WalletGateway{Validator: "v"}, nil, nil,
			map[string]string{gateway.SettingsKey: `{"enabled":false}`, gateway.WalletsKey: `[]`}},
		{"settings and credentials", domain.WalletGateway{Validator: "v", Enabled: true, BaseURL: "https://c.test", Credentials: "sealed", UpdatedAt: &at}, nil,
			&domain.CustodyCredentials{APIKey: "k", APISecret: "s"},
			map[string]string{
				gateway.SettingsKey:    `{"enabled":true,"baseUrl":"https://c.test","updatedAt":"2026-11-29T01:02:03Z"}`,
				gateway.CredentialsKey: `{"apiKey":"k","apiSecret":"s"}`,
				gateway.WalletsKey:     `[]`,
			}},
		{"a wallet whose party is not recorded is left out", domain.WalletGateway{Validator: "v", Enabled: true}, []domain.GatewayWallet{done, pending}, nil,
			map[string]string{
				gateway.SettingsKey: `{"enabled":true}`,
				gateway.WalletsKey:  `[{"walletId":"w-1","partyId":"alice::12","partyHint":"alice","signingProvider":"custody-provider-a","primary":true,"vault":"v7","createdAt":"2026-11-29T01:02:03Z"}]`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gateway.SecretData(tt.gw, tt.wallets, tt.creds)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("keys: got %d, want %d", len(got), len(tt.want))
			}
			for k, want := range tt.want {
				if string(got[k]) != want {
					t.Errorf("%s: got %s, want %s", k, got[k], want)
				}
			}
		})
	}
}
