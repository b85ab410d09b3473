package platform

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// rightSet is the rights that query or form parameters name, in the
// ledger's shape, keyed by kind and party.
type rightSet map[string]ledgerapi.Right

func rightKey(kind, party string) string { return kind + "\x00" + party }

// add puts the right {kind: {value: {party}}} ({} without a party) into
// the set; neither step can fail (strings only, the union keeps raw JSON).
func (rs rightSet) add(kind, party string) {
	value := map[string]string{}
	if party != "" {
		value["party"] = party
	}
	raw, _ := json.Marshal(map[string]any{kind: map[string]any{"value": value}})
	var k ledgerapi.Kind
	_ = k.UnmarshalJSON(raw)
	rs[rightKey(kind, party)] = ledgerapi.Right{Kind: &k}
}

// list is the set in a stable order.
func (rs rightSet) list() *[]ledgerapi.Right {
	out := make([]ledgerapi.Right, 0, len(rs))
	for _, k := range slices.Sorted(maps.Keys(rs)) {
		out = append(out, rs[k])
	}
	return &out
}

// rightsFor reads the right parameters shared by createUser and
// updateUserRights, then resolves the validator's nodes.
func (s *Server) rightsFor(ctx context.Context, operation, validator string, participantAdmin, idpAdmin, readAny, execAny *bool, actAs, readAs, execAs *[]string) (rightSet, *upstream.Node, error) {
	rs := rightSet{}
	for kind, on := range map[string]*bool{"ParticipantAdmin": participantAdmin, "IdentityProviderAdmin": idpAdmin, "CanReadAsAnyParty": readAny, "CanExecuteAsAnyParty": execAny} {
		if on != nil && *on {
			rs.add(kind, "")
		}
	}
	for kind, parties := range map[string]*[]string{"CanActAs": actAs, "CanReadAs": readAs, "CanExecuteAs": execAs} {
		for _, p := range ptr.Deref(parties, nil) {
			if strings.TrimSpace(p) == "" {
				return nil, nil, domain.Invalid(strings.ToLower(kind[:1])+kind[1:], "must name a party")
			}
			rs.add(kind, p)
		}
	}
	n, err := s.node(ctx, operation, validator)
	return rs, n, err
}

// wireRights reads a ledger answer's rights: each right's key and raw form.
func wireRights(raw []json.RawMessage) (rightSet, error) {
	out := rightSet{}
	for _, r := range raw {
		var w struct {
			Kind map[string]struct {
				Value struct {
					Party string `json:"party"`
				} `json:"value"`
			} `json:"kind"`
		}
		if err := json.Unmarshal(r, &w); err != nil {
			return nil, err
		}
		var lr ledgerapi.Right
		if err := json.Unmarshal(r, &lr); err != nil {
			return nil, err
		}
		for kind, v := range w.Kind {
			out[rightKey(kind, v.Value.Party)] = lr
		}
	}
	return out, nil
}

// CreateUser creates a ledger user with the rights named (ledger POST /v2/users).
func (s *Server) CreateUser(ctx context.Context, req platformapi.CreateUserRequestObject) (platformapi.CreateUserResponseObject, error) {
	p := req.Params
	rs, n, err := s.rightsFor(ctx, "createUser", req.Name, p.ParticipantAdmin, p.IdentityProviderAdmin, p.CanReadAsAnyParty, p.CanExecuteAsAnyParty, p.CanActAs, p.CanReadAs, p.CanExecuteAs)
	if err != nil {
		return nil, err
	}
	u := ledgerapi.User{Id: p.UserId}
	if p.PrimaryParty != nil && *p.PrimaryParty != "" {
		u.PrimaryParty = p.PrimaryParty
	}
	resp, err := n.Ledger.PostV2UsersWithResponse(ctx, ledgerapi.CreateUserRequest{User: u, Rights: rs.list()})
	return relay[platformapi.CreateUser200JSONResponse](n, upstream.Ledger, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body })
}

// UpdateUser changes what is sent of a ledger user (ledger PATCH
// /v2/users/{user-id} with an update mask naming exactly that).
func (s *Server) UpdateUser(ctx context.Context, req platformapi.UpdateUserRequestObject) (platformapi.UpdateUserResponseObject, error) {
	p := req.Params
	u := ledgerapi.User{Id: req.UserId}
	var paths []string
	if p.PrimaryParty != nil {
		u.PrimaryParty, paths = p.PrimaryParty, append(paths, "primary_party")
	}
	if p.IsDeactivated != nil {
		u.IsDeactivated, paths = p.IsDeactivated, append(paths, "is_deactivated")
	}
	if p.Annotation != nil && len(*p.Annotation) > 0 {
		ann := ledgerapi.MapString{}
		for _, a := range *p.Annotation {
			k, v, ok := strings.Cut(a, "=")
			if !ok || k == "" {
				return nil, domain.Invalid("annotation", "%q is not key=value", a)
			}
			ann[k] = v
		}
		u.Metadata, paths = &ledgerapi.ObjectMeta{Annotations: &ann}, append(paths, "metadata.annotations")
	}
	if len(paths) == 0 {
		return nil, domain.Invalid("", "nothing to update: send primaryParty, isDeactivated or annotation")
	}
	n, err := s.node(ctx, "updateUser", req.Name)
	if err != nil {
		return nil, err
	}
	mask := ledgerapi.FieldMask{Paths: &paths, UnknownFields: ledgerapi.UnknownFieldSet{Fields: ledgerapi.MapIntField{}}}
	resp, err := n.Ledger.PatchV2UsersUserIdWithResponse(ctx, req.UserId, ledgerapi.UpdateUserRequest{User: u, UpdateMask: mask})
	return relay[platformapi.UpdateUser200JSONResponse](n, upstream.Ledger, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body })
}

// ListUserRights passes the ledger's GET /v2/users/{user-id}/rights through.
func (s *Server) ListUserRights(ctx context.Context, req platformapi.ListUserRightsRequestObject) (platformapi.ListUserRightsResponseObject, error) {
	n, err := s.node(ctx, "listUserRights", req.Name)
	if err != nil {
		return nil, err
	}
	out, _, err := userRights(ctx, n, req.UserId)
	return platformapi.ListUserRights200JSONResponse(out), err
}

// userRights reads a user's rights, as the ledger answers them and by key.
func userRights(ctx context.Context, n *upstream.Node, userID string) (platformapi.UserRights, rightSet, error) {
	resp, err := n.Ledger.GetV2UsersUserIdRightsWithResponse(ctx, userID)
	out, err := relay[platformapi.UserRights](n, upstream.Ledger, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body })
	if err != nil {
		return out, nil, err
	}
	endpoint := resp.HTTPResponse.Request.URL.String()
	var raw struct {
		Rights []json.RawMessage `json:"rights"`
	}
	if err := passThrough("ledger API", endpoint, resp.Body, &raw); err != nil {
		return out, nil, err
	}
	have, err := wireRights(raw.Rights)
	if err != nil {
		return out, nil, &domain.UpstreamError{Endpoint: upstream.Call{URL: endpoint}.Endpoint(), Message: "the ledger API answered with rights that do not match its description", Cause: err}
	}
	return out, have, nil
}

// UpdateUserRights makes the rights sent the user's complete set: revoke
// what the user has and is not sent, then grant what is new.
func (s *Server) UpdateUserRights(ctx context.Context, req platformapi.UpdateUserRightsRequestObject) (platformapi.UpdateUserRightsResponseObject, error) {
	p := req.Params
	want, n, err := s.rightsFor(ctx, "updateUserRights", req.Name, p.ParticipantAdmin, p.IdentityProviderAdmin, p.CanReadAsAnyParty, p.CanExecuteAsAnyParty, p.CanActAs, p.CanReadAs, p.CanExecuteAs)
	if err != nil {
		return nil, err
	}
	_, have, err := userRights(ctx, n, req.UserId)
	if err != nil {
		return nil, err
	}
	// What the user has and is sent stays: neither revoked nor granted.
	grant, revoke := maps.Clone(want), have
	for k := range want {
		if _, ok := have[k]; ok {
			delete(grant, k)
			delete(revoke, k)
		}
	}
	if len(revoke) > 0 {
		resp, err := n.Ledger.PatchV2UsersUserIdRightsWithResponse(ctx, req.UserId, ledgerapi.RevokeUserRightsRequest{UserId: req.UserId, Rights: revoke.list()})
		if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body }); err != nil {
			return nil, err
		}
	}
	if len(grant) > 0 {
		resp, err := n.Ledger.PostV2UsersUserIdRightsWithResponse(ctx, req.UserId, ledgerapi.GrantUserRightsRequest{UserId: req.UserId, Rights: grant.list()})
		if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body }); err != nil {
			return nil, err
		}
	}
	out, _, err := userRights(ctx, n, req.UserId)
	return platformapi.UpdateUserRights200JSONResponse(out), err
}
