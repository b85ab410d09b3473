package platform

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// maxPages bounds the pages followed for one listing, against a ledger
// that keeps answering a next page token.
const maxPages = 10_000

// ListParties passes the ledger's parties whose id starts with partyId through.
func (s *Server) ListParties(ctx context.Context, req platformapi.ListPartiesRequestObject) (platformapi.ListPartiesResponseObject, error) {
	n, err := s.node(ctx, "listParties", req.Name)
	if err != nil {
		return nil, err
	}
	return partiesWithPrefix(ctx, n, ptr.Deref(req.Params.PartyId, ""))
}

// partiesWithPrefix follows every page of the ledger's GET /v2/parties and
// keeps the entries whose party id starts with prefix, as the ledger wrote
// them: each is decoded only as far as its party id.
func partiesWithPrefix(ctx context.Context, n *upstream.Node, prefix string) (rawParties, error) {
	out := rawParties{}
	params := &ledgerapi.GetV2PartiesParams{}
	for range maxPages {
		resp, err := n.Ledger.GetV2Parties(ctx, params)
		var raw []byte
		if err == nil {
			raw, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return resp, raw }); err != nil {
			return nil, err
		}
		var page struct {
			PartyDetails  []json.RawMessage `json:"partyDetails"`
			NextPageToken string            `json:"nextPageToken"`
		}
		if err := passThrough("ledger API", resp.Request.URL.String(), raw, &page); err != nil {
			return nil, err
		}
		for _, p := range page.PartyDetails {
			var id partyID
			if err := passThrough("ledger API", resp.Request.URL.String(), p, &id); err != nil {
				return nil, err
			}
			if strings.HasPrefix(id.Party, prefix) {
				out = append(out, p)
			}
		}
		if page.NextPageToken == "" {
			break
		}
		params.PageToken = &page.NextPageToken
	}
	return out, nil
}

// partyID is a ledger party entry decoded as far as its id.
type partyID struct {
	Party string `json:"party"`
}

// rawParties is listParties' 200: the ledger's partyDetails entries, unchanged.
type rawParties []json.RawMessage

func (r rawParties) VisitListPartiesResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode([]json.RawMessage(r))
}

// AllocateParty allocates a participant-managed party (ledger POST /v2/parties).
func (s *Server) AllocateParty(ctx context.Context, req platformapi.AllocatePartyRequestObject) (platformapi.AllocatePartyResponseObject, error) {
	n, err := s.node(ctx, "allocateParty", req.Name)
	if err != nil {
		return nil, err
	}
	resp, err := n.Ledger.PostV2PartiesWithResponse(ctx, ledgerapi.AllocatePartyRequest{PartyIdHint: ptr.To(req.Params.PartyIdHint)})
	return relay[platformapi.AllocateParty200JSONResponse](n, upstream.Ledger, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body })
}
