package platform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// gatewayFor checks that the gateway state is wired and the validator exists.
func (s *Server) gatewayFor(operation, validator string) (GatewayStore, error) {
	if s.Gateway == nil {
		return nil, notWired(operation, "the wallet gateway's record (database)")
	}
	if _, err := s.read(Resources.ResourceObject, domain.KindValidator, validator); err != nil {
		return nil, err
	}
	return s.Gateway, nil
}

// walletGateway is the validator's recorded gateway (gatewayFor).
func (s *Server) walletGateway(ctx context.Context, operation, validator string) (GatewayStore, domain.WalletGateway, error) {
	g, err := s.gatewayFor(operation, validator)
	if err != nil {
		return nil, domain.WalletGateway{}, err
	}
	gw, err := g.WalletGateway(ctx, validator)
	return g, gw, err
}

func (s *Server) ListGatewayWallets(ctx context.Context, req platformapi.ListGatewayWalletsRequestObject) (platformapi.ListGatewayWalletsResponseObject, error) {
	g, err := s.gatewayFor("listGatewayWallets", req.Name)
	if err != nil {
		return nil, err
	}
	ws, err := g.GatewayWallets(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	out := platformapi.ListGatewayWallets200JSONResponse{}
	for _, w := range ws {
		// A wallet whose party is not recorded is not a wallet yet.
		if w.PartyID != "" {
			out = append(out, walletView(w))
		}
	}
	return out, nil
}

// CreateGatewayWallet records the wallet, allocates its party on the
// validator's participant and records the party: a retry with the same
// party hint finishes a failed or crashed create (adopting the party an
// earlier attempt allocated). A wallet needs an enabled custody provider
// with credentials.
func (s *Server) CreateGatewayWallet(ctx context.Context, req platformapi.CreateGatewayWalletRequestObject) (platformapi.CreateGatewayWalletResponseObject, error) {
	g, gw, err := s.walletGateway(ctx, "createGatewayWallet", req.Name)
	if err != nil {
		return nil, err
	}
	if err := walletAllowed(gw); err != nil {
		return nil, err
	}
	body := req.Body
	n, err := s.node(ctx, "createGatewayWallet", req.Name)
	if err != nil {
		return nil, err
	}
	w := domain.GatewayWallet{
		WalletID: newWalletID(), Validator: req.Name, PartyHint: body.PartyHint, Vault: ptr.Deref(body.Vault, ""),
		SigningProvider: string(body.SigningProvider), Primary: ptr.Deref(body.Primary, false),
	}
	fresh := w.WalletID
	if err := g.RecordWallet(ctx, &w); err != nil {
		return nil, err
	}
	if w.WalletID != fresh {
		// An earlier create of this hint was recorded and not finished:
		// its party may exist already.
		if w.PartyID, err = allocatedParty(ctx, n, w.PartyHint); err != nil {
			return nil, err
		}
	}
	if w.PartyID == "" {
		if w.PartyID, err = allocateParty(ctx, n, w.PartyHint); err != nil {
			return nil, err
		}
	}
	if err := g.CompleteWallet(ctx, w); err != nil {
		return nil, err
	}
	return platformapi.CreateGatewayWallet200JSONResponse(walletView(w)), nil
}

// allocateParty allocates a participant-managed party of hint.
func allocateParty(ctx context.Context, n *upstream.Node, hint string) (string, error) {
	resp, err := n.Ledger.PostV2PartiesWithResponse(ctx, ledgerapi.AllocatePartyRequest{PartyIdHint: &hint})
	if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body }); err != nil {
		return "", err
	}
	if resp.JSON200 == nil || resp.JSON200.PartyDetails.Party == "" {
		return "", &domain.UpstreamError{Endpoint: upstream.Call{URL: resp.HTTPResponse.Request.URL.String()}.Endpoint(), Message: "ledger API answered the allocation without a party"}
	}
	return resp.JSON200.PartyDetails.Party, nil
}

// allocatedParty is the party of hint the participant hosts already
// (hint::<namespace>), "" when it hosts none.
func allocatedParty(ctx context.Context, n *upstream.Node, hint string) (string, error) {
	found, err := partiesWithPrefix(ctx, n, hint+"::")
	if err != nil || len(found) == 0 {
		return "", err
	}
	var id partyID
	_ = json.Unmarshal(found[0], &id) // partiesWithPrefix decoded it and checked its prefix
	return id.Party, nil
}

func walletAllowed(g domain.WalletGateway) error {
	if !g.Enabled {
		return domain.Conflict("custody provider %s is not enabled for this validator", platformapi.SigningProviderCustodyProviderA)
	}
	if g.Credentials == "" {
		return domain.Conflict("custody provider %s has no credentials configured", platformapi.SigningProviderCustodyProviderA)
	}
	return nil
}

func (s *Server) GetCustodyProviderSettings(ctx context.Context, req platformapi.GetCustodyProviderSettingsRequestObject) (platformapi.GetCustodyProviderSettingsResponseObject, error) {
	_, gw, err := s.walletGateway(ctx, "getCustodyProviderSettings", req.Name)
	if err != nil {
		return nil, err
	}
	return platformapi.GetCustodyProviderSettings200JSONResponse(settingsView(gw)), nil
}

// UpdateCustodyProviderSettings records only what the body sends; the
// credentials, when sent, replace the stored ones as a whole, sealed under
// the cluster's password key.
func (s *Server) UpdateCustodyProviderSettings(ctx context.Context, req platformapi.UpdateCustodyProviderSettingsRequestObject) (platformapi.UpdateCustodyProviderSettingsResponseObject, error) {
	g, err := s.gatewayFor("updateCustodyProviderSettings", req.Name)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if b.BaseUrl != nil {
		// Anyone who may read the settings reads the address back, so it
		// holds no credentials; the message does not quote it either.
		if u, err := url.Parse(*b.BaseUrl); err != nil || u.User != nil {
			return nil, domain.Invalid("baseUrl", "must not carry credentials (user or password): send them as credentials, which are stored sealed and never returned")
		}
	}
	sealed := ""
	if c := b.Credentials; c != nil {
		// Never store half a credential, whatever validation let through.
		if c.ApiKey == nil || c.ApiSecret == nil || *c.ApiKey == "" || *c.ApiSecret == "" {
			return nil, domain.Invalid("credentials", "apiKey and apiSecret are both required")
		}
		if s.Keys == nil {
			return nil, notWired("updateCustodyProviderSettings", "the cluster's password key")
		}
		key, err := s.Keys.ReadPasswordKey(ctx)
		if err != nil {
			return nil, err
		}
		if sealed, err = keyring.SealCredentials(key, req.Name, domain.CustodyCredentials{APIKey: *c.ApiKey, APISecret: *c.ApiSecret}); err != nil {
			return nil, err
		}
	}
	gw, err := g.UpdateWalletGateway(ctx, req.Name, func(gw *domain.WalletGateway) error {
		gw.Enabled = ptr.Deref(b.Enabled, gw.Enabled)
		gw.BaseURL = ptr.Deref(b.BaseUrl, gw.BaseURL)
		if sealed != "" {
			gw.Credentials = sealed
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return platformapi.UpdateCustodyProviderSettings200JSONResponse(settingsView(gw)), nil
}

func settingsView(g domain.WalletGateway) platformapi.CustodyProviderSettings {
	out := platformapi.CustodyProviderSettings{
		Provider: platformapi.SigningProviderCustodyProviderA, Enabled: g.Enabled,
		CredentialsConfigured: g.Credentials != "", BaseUrl: domain.NonZero(g.BaseURL),
	}
	if g.UpdatedAt != nil {
		out.UpdatedAt = ptr.To(g.UpdatedAt.Truncate(time.Millisecond))
	}
	return out
}

func walletView(w domain.GatewayWallet) platformapi.GatewayWallet {
	return platformapi.GatewayWallet{
		WalletId: w.WalletID, PartyId: w.PartyID, PartyHint: w.PartyHint,
		SigningProvider: platformapi.SigningProvider(w.SigningProvider), Primary: w.Primary,
		CreatedAt: w.CreatedAt.Truncate(time.Millisecond), Vault: domain.NonZero(w.Vault),
	}
}

func newWalletID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "wallet-" + hex.EncodeToString(b[:])
}
