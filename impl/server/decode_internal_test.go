package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/docs"
)

// creates answers a create of each release with what it was handed.
type creates struct {
	mgmtCreates
	platCreates
}

type mgmtCreates struct {
	managementapi.StrictServerInterface
	validator *managementapi.CreateValidatorJSONRequestBody
}

type platCreates struct {
	platformapi.StrictServerInterface
	wallet *platformapi.CreateGatewayWalletJSONRequestBody
}

func (s *mgmtCreates) CreateValidator(_ context.Context, r managementapi.CreateValidatorRequestObject) (managementapi.CreateValidatorResponseObject, error) {
	s.validator = r.Body
	return managementapi.CreateValidator201JSONResponse{}, nil
}

func (s *mgmtCreates) ListRemoteParticipants(context.Context, managementapi.ListRemoteParticipantsRequestObject) (managementapi.ListRemoteParticipantsResponseObject, error) {
	return managementapi.ListRemoteParticipants200JSONResponse{Participants: []managementapi.RemoteParticipantDto{}}, nil
}

func (s *platCreates) CreateGatewayWallet(_ context.Context, r platformapi.CreateGatewayWalletRequestObject) (platformapi.CreateGatewayWalletResponseObject, error) {
	s.wallet = r.Body
	return platformapi.CreateGatewayWallet200JSONResponse{}, nil
}

// decodeServer is the whole server (routing, every middleware, the
// generated strict handlers) around creates, the creates public.
func decodeServer(tb testing.TB) (*Server, *creates) {
	tb.Helper()
	mgmt, plat, err := Contracts()
	if err != nil {
		tb.Fatal(err)
	}
	d, err := docs.New(plat, mgmt)
	if err != nil {
		tb.Fatal(err)
	}
	stub := &creates{}
	s, err := New(Options{
		Logger: slog.New(slog.DiscardHandler), Management: &stub.mgmtCreates, Platform: &stub.platCreates, Docs: d,
		MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20,
		Public: []string{"createValidator", "createGatewayWallet", "listRemoteParticipants"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s, stub
}

// validatorExample is the contract's own example of a create.
func validatorExample(tb testing.TB, s *Server) []byte {
	tb.Helper()
	op := s.management.doc.Paths.Value("/api/validators").Post
	raw, err := json.Marshal(op.RequestBody.Value.Content.Get("application/json").Example)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// TestHandlerGetsValidatedBody: in each release the generated strict
// handler binds the document that validation saw (kin-openapi's
// KeepValidatedValue), defaults included, instead of decoding the body again.
func TestHandlerGetsValidatedBody(t *testing.T) {
	t.Parallel()
	s, stub := decodeServer(t)
	wallet := `{"partyHint":"acme","signingProvider":"custody-provider-a"}`
	for _, tc := range []struct {
		name, path, body string
		status           int
		check            func() bool
	}{
		{"1.11 createValidator", "/api/validators", string(validatorExample(t, s)), http.StatusCreated,
			func() bool { return stub.validator != nil && stub.validator.Name == "validator-1" }},
		{"2.0 createGatewayWallet", "/api/v1/validators/v1/wallet-gateway/wallets", wallet, http.StatusOK,
			func() bool {
				return stub.wallet != nil && stub.wallet.PartyHint == "acme" && stub.wallet.Primary != nil && !*stub.wallet.Primary
			}},
		// Validation never saw a "PARTYHINT": a second decode by encoding/json
		// would bind it (case-insensitive, the last member wins).
		{"2.0 member names bind exactly", "/api/v1/validators/v1/wallet-gateway/wallets",
			`{"partyHint":"acme","signingProvider":"custody-provider-a","primary":true,"PARTYHINT":"other"}`, http.StatusOK,
			func() bool { return stub.wallet != nil && stub.wallet.PartyHint == "acme" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stub.validator, stub.wallet = nil, nil
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if !tc.check() {
				t.Errorf("the handler was not handed the validated body: %+v %+v", stub.validator, stub.wallet)
			}
		})
	}
}

// BenchmarkDecode: a create-validator request through the whole echo stack
// (checks, null check, validation, binding) to a handler that answers at
// once; what is measured is the body's way to the handler.
func BenchmarkDecode(b *testing.B) {
	s, _ := decodeServer(b)
	body := validatorExample(b, s)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/api/validators", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		_, _ = io.Copy(io.Discard, rec.Body)
	}
}

// BenchmarkValidatedRead: a read with query parameters through the whole
// echo stack (checks, parameter validation, binding) to a handler that
// answers an empty page at once.
func BenchmarkValidatedRead(b *testing.B) {
	s, _ := decodeServer(b)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/api/remote-participants?from=40&limit=20&healthStatus=true", nil)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
