package platform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

const partGateway = "the wallet gateway state (the Secret <validator>-wallet-gateway)"

// gatewayFor checks that the validator exists (404 otherwise) and that
// the gateway state is wired.
func (s *Server) gatewayFor(operation, validator string) (GatewayState, error) {
	if s.gateway == nil {
		return nil, notWired(operation, partGateway)
	}
	if _, err := s.object(domain.KindValidator, validator); err != nil {
		return nil, err
	}
	return s.gateway, nil
}

func (s *Server) ListGatewayWallets(ctx context.Context, req platformapi.ListGatewayWalletsRequestObject) (platformapi.ListGatewayWalletsResponseObject, error) {
	g, err := s.gatewayFor("listGatewayWallets", req.Name)
	if err != nil {
		return nil, err
	}
	r, err := g.Load(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	out := platformapi.ListGatewayWallets200JSONResponse{}
	for _, w := range r.Wallets {
		out = append(out, walletView(w))
	}
	return out, nil
}

// CreateGatewayWallet allocates the wallet's party on the validator's
// participant and records the wallet. The provider must be enabled and
// hold credentials: a wallet whose custody provider cannot be reached is
// not a wallet.
func (s *Server) CreateGatewayWallet(ctx context.Context, req platformapi.CreateGatewayWalletRequestObject) (platformapi.CreateGatewayWalletResponseObject, error) {
	g, err := s.gatewayFor("createGatewayWallet", req.Name)
	if err != nil {
		return nil, err
	}
	body := req.Body
	r, err := g.Load(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	if err := walletAllowed(r, body.PartyHint); err != nil {
		return nil, err
	}
	n, err := s.node(ctx, "createGatewayWallet", req.Name)
	if err != nil {
		return nil, err
	}
	hint := body.PartyHint
	resp, err := n.Ledger.PostV2PartiesWithResponse(ctx, ledgerapi.AllocatePartyRequest{PartyIdHint: &hint})
	if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body }); err != nil {
		return nil, err
	}
	if resp.JSON200 == nil || resp.JSON200.PartyDetails.Party == "" {
		return nil, &domain.UpstreamError{Endpoint: resp.HTTPResponse.Request.URL.String(), Message: "ledger API answered the allocation without a party"}
	}
	w := GatewayWalletRecord{
		WalletID: newWalletID(), PartyID: resp.JSON200.PartyDetails.Party, PartyHint: hint,
		Provider: string(body.SigningProvider), Primary: body.Primary != nil && *body.Primary,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
	if body.Vault != nil {
		w.Vault = *body.Vault
	}
	_, err = g.Update(ctx, req.Name, func(r *GatewayRecord) error {
		if err := walletAllowed(*r, hint); err != nil {
			return err
		}
		if w.Primary {
			for i := range r.Wallets {
				r.Wallets[i].Primary = false
			}
		}
		r.Wallets = append(r.Wallets, w)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return platformapi.CreateGatewayWallet200JSONResponse(walletView(w)), nil
}

func walletAllowed(r GatewayRecord, hint string) error {
	if !r.Enabled {
		return domain.Conflict("custody provider %s is not enabled for this validator", platformapi.SigningProviderCustodyProviderA)
	}
	if r.Credentials == nil {
		return domain.Conflict("custody provider %s has no credentials configured", platformapi.SigningProviderCustodyProviderA)
	}
	for _, w := range r.Wallets {
		if w.PartyHint == hint {
			return domain.Conflict("a wallet for party hint %q exists already (%s)", hint, w.WalletID)
		}
	}
	return nil
}

func (s *Server) GetCustodyProviderSettings(ctx context.Context, req platformapi.GetCustodyProviderSettingsRequestObject) (platformapi.GetCustodyProviderSettingsResponseObject, error) {
	g, err := s.gatewayFor("getCustodyProviderSettings", req.Name)
	if err != nil {
		return nil, err
	}
	r, err := g.Load(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return platformapi.GetCustodyProviderSettings200JSONResponse(settingsView(r)), nil
}

// UpdateCustodyProviderSettings changes only what the body sends; the
// credentials, when sent, replace the stored ones as a whole.
func (s *Server) UpdateCustodyProviderSettings(ctx context.Context, req platformapi.UpdateCustodyProviderSettingsRequestObject) (platformapi.UpdateCustodyProviderSettingsResponseObject, error) {
	g, err := s.gatewayFor("updateCustodyProviderSettings", req.Name)
	if err != nil {
		return nil, err
	}
	b := req.Body
	r, err := g.Update(ctx, req.Name, func(r *GatewayRecord) error {
		if b.Enabled != nil {
			r.Enabled = *b.Enabled
		}
		if b.BaseUrl != nil {
			r.BaseURL = *b.BaseUrl
		}
		if c := b.Credentials; c != nil {
			// The contract requires both; a body that slipped past
			// validation must not store half a credential.
			if c.ApiKey == nil || c.ApiSecret == nil || *c.ApiKey == "" || *c.ApiSecret == "" {
				return domain.Invalid("credentials", "apiKey and apiSecret are both required")
			}
			r.Credentials = &CustodyCredentials{APIKey: *c.ApiKey, APISecret: *c.ApiSecret}
		}
		now := time.Now().UTC().Truncate(time.Millisecond)
		r.UpdatedAt = &now
		return nil
	})
	if err != nil {
		return nil, err
	}
	return platformapi.UpdateCustodyProviderSettings200JSONResponse(settingsView(r)), nil
}

func settingsView(r GatewayRecord) platformapi.CustodyProviderSettings {
	out := platformapi.CustodyProviderSettings{
		Provider: platformapi.SigningProviderCustodyProviderA, Enabled: r.Enabled,
		CredentialsConfigured: r.Credentials != nil, UpdatedAt: r.UpdatedAt,
	}
	if r.BaseURL != "" {
		out.BaseUrl = &r.BaseURL
	}
	return out
}

func walletView(w GatewayWalletRecord) platformapi.GatewayWallet {
	out := platformapi.GatewayWallet{
		WalletId: w.WalletID, PartyId: w.PartyID, PartyHint: w.PartyHint,
		SigningProvider: platformapi.SigningProvider(w.Provider), Primary: w.Primary, CreatedAt: w.CreatedAt,
	}
	if w.Vault != "" {
		out.Vault = &w.Vault
	}
	return out
}

func newWalletID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "wallet-" + hex.EncodeToString(b[:])
}
