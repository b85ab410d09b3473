package platform

import (
	"context"
	"net/http"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/gen/upstream/validatorapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// ListWalletUsers passes the validator app's GET /v0/admin/users through.
func (s *Server) ListWalletUsers(ctx context.Context, req platformapi.ListWalletUsersRequestObject) (platformapi.ListWalletUsersResponseObject, error) {
	n, err := s.node(ctx, "listWalletUsers", req.Name)
	if err != nil {
		return nil, err
	}
	resp, err := n.Validator.ListUsersWithResponse(ctx)
	return relay[platformapi.ListWalletUsers200JSONResponse](n, upstream.ValidatorApp, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body })
}

// OnboardWalletUser onboards name with a fresh party (validator app POST
// /v0/admin/users without party_id).
func (s *Server) OnboardWalletUser(ctx context.Context, req platformapi.OnboardWalletUserRequestObject) (platformapi.OnboardWalletUserResponseObject, error) {
	n, err := s.node(ctx, "onboardWalletUser", req.Name)
	if err != nil {
		return nil, err
	}
	resp, err := n.Validator.OnboardUserWithResponse(ctx, validatorapi.OnboardUserRequest{Name: req.Body.Name})
	if err := answered(upstream.ValidatorApp, n.Target.ValidatorAppURL, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body }); err != nil {
		return nil, err
	}
	if resp.JSON200 == nil {
		return nil, &domain.UpstreamError{Endpoint: upstream.Call{URL: resp.HTTPResponse.Request.URL.String()}.Endpoint(), Message: "the validator app answered without a party_id"}
	}
	return platformapi.OnboardWalletUser200JSONResponse{Name: req.Body.Name, PartyId: resp.JSON200.PartyId}, nil
}

// OffboardWalletUser offboards username (validator app POST
// /v0/admin/users/offboard), never the validator's own wallet user: that
// is the operator's ledger user of GET /v0/validator-user.
func (s *Server) OffboardWalletUser(ctx context.Context, req platformapi.OffboardWalletUserRequestObject) (platformapi.OffboardWalletUserResponseObject, error) {
	n, err := s.node(ctx, "offboardWalletUser", req.Name)
	if err != nil {
		return nil, err
	}
	who, err := n.Validator.GetValidatorUserInfoWithResponse(ctx)
	if err := answered(upstream.ValidatorApp, n.Target.ValidatorAppURL, err, func() (*http.Response, []byte) { return who.HTTPResponse, who.Body }); err != nil {
		return nil, err
	}
	if who.JSON200 == nil {
		return nil, &domain.UpstreamError{Endpoint: upstream.Call{URL: who.HTTPResponse.Request.URL.String()}.Endpoint(), Message: "the validator app did not name its operator user"}
	}
	if who.JSON200.UserName == req.Username {
		return nil, domain.Conflict("%q is the validator's own wallet user, which is never offboarded", req.Username)
	}
	resp, err := n.Validator.OffboardUserWithResponse(ctx, &validatorapi.OffboardUserParams{Username: req.Username})
	if err := answered(upstream.ValidatorApp, n.Target.ValidatorAppURL, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body }); err != nil {
		return nil, err
	}
	return platformapi.OffboardWalletUser200JSONResponse{Username: req.Username, Offboarded: true}, nil
}
