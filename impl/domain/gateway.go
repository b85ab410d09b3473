package domain

import (
	"log/slog"
	"time"
)

// WalletGateway is a validator's wallet gateway as an operator set it
// (release 2.0's custody provider settings): recorded in the database, and
// written by the elected leader into the Secret <validator>-wallet-gateway.
type WalletGateway struct {
	Validator string
	Enabled   bool
	BaseURL   string
	// Credentials are the custody provider's credentials, sealed under the
	// cluster's password key (keyring.SealCredentials); "" when none.
	Credentials string
	UpdatedAt   *time.Time
}

// GatewayWallet is one wallet of a validator's wallet gateway. It is
// recorded before its party is allocated: PartyID is "" until the
// allocation is recorded, and only then is it a wallet.
type GatewayWallet struct {
	WalletID        string
	Validator       string
	PartyHint       string
	PartyID         string
	SigningProvider string
	Primary         bool
	Vault           string
	CreatedAt       time.Time
}

// CustodyCredentials are a custody provider's API credentials. String,
// GoString and LogValue hide them, so that no log line or error message can
// carry them by accident.
type CustodyCredentials struct {
	APIKey    string `json:"apiKey"`
	APISecret string `json:"apiSecret"`
}

func (CustodyCredentials) String() string       { return "[credentials]" }
func (CustodyCredentials) GoString() string     { return "[credentials]" }
func (CustodyCredentials) LogValue() slog.Value { return slog.StringValue("[credentials]") }
