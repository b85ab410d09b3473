package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	participantv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/participant/v30"
	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/gen/upstream/scanapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// GetValidatorDetails is the Validator resource with the ledger's
// authenticated user, every user and the participant's DARs, fetched
// concurrently; a failed section is replaced by <section>Error, still 200.
func (s *Server) GetValidatorDetails(ctx context.Context, req platformapi.GetValidatorDetailsRequestObject) (platformapi.GetValidatorDetailsResponseObject, error) {
	resources, err := s.resources()
	if err != nil {
		return nil, err
	}
	n, err := s.node(ctx, "getValidatorDetails", req.Name)
	if err != nil {
		return nil, err
	}
	// From the cache, as stored minus managedFields, like getValidator.
	raw, err := resources.ResourceObject(domain.KindValidator, req.Name)
	if err != nil {
		return nil, err
	}
	var out platformapi.GetValidatorDetails200JSONResponse
	if err := json.Unmarshal(raw, &out.Validator); err != nil {
		return nil, domain.Internal(err)
	}
	out.LedgerApiEndpoint = ptr.To(n.Target.LedgerURL)

	var wg sync.WaitGroup
	section := func(fetch func() error, failed **string) {
		wg.Go(func() {
			if err := fetch(); err != nil {
				s.logUpstream(ctx, "getValidatorDetails", err)
				*failed = ptr.To(sectionError(err))
			}
		})
	}
	section(func() error {
		r, err := n.Ledger.GetV2AuthenticatedUserWithResponse(ctx, nil)
		u, err := relay[platformapi.AuthenticatedUser](n, upstream.Ledger, err, func() (*http.Response, []byte) { return r.HTTPResponse, r.Body })
		if err != nil {
			return err
		}
		out.AuthenticatedUser = &u
		return nil
	}, &out.AuthenticatedUserError)
	section(func() error {
		users := []platformapi.LedgerUser{}
		params := &ledgerapi.GetV2UsersParams{}
		for range maxPages {
			r, err := n.Ledger.GetV2UsersWithResponse(ctx, params)
			if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return r.HTTPResponse, r.Body }); err != nil {
				return err
			}
			var page struct {
				Users         []platformapi.LedgerUser `json:"users"`
				NextPageToken string                   `json:"nextPageToken"`
			}
			if err := passThrough("ledger API", r.HTTPResponse.Request.URL.String(), r.Body, &page); err != nil {
				return err
			}
			users = append(users, page.Users...)
			if page.NextPageToken == "" {
				break
			}
			params.PageToken = &page.NextPageToken
		}
		out.AllUsers = &users
		return nil
	}, &out.AllUsersError)
	section(func() error {
		a, err := n.Admin()
		if err != nil {
			return err
		}
		r, err := a.Packages.ListDars(ctx, &participantv30.ListDarsRequest{})
		if err != nil {
			return err
		}
		dars := []platformapi.DarPackage{}
		for _, d := range r.GetDars() {
			dars = append(dars, platformapi.DarPackage{MainPackageId: d.GetMain(), Name: d.GetName(), Version: d.GetVersion()})
		}
		out.Dars = &dars
		return nil
	}, &out.DarsError)
	wg.Wait()
	return out, nil
}

// sectionError is what a failed section says: the safe message, with the
// address for an upstream failure.
func sectionError(err error) string {
	var up *domain.UpstreamError
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		return de.Message
	case errors.As(err, &up):
		return up.Endpoint + ": " + up.Message
	}
	return "internal error"
}

// GetValidatorBalances looks up the validator party's holdings in scan's
// latest snapshot; a failed lookup is still 200, with error (and party_id
// when known).
func (s *Server) GetValidatorBalances(ctx context.Context, req platformapi.GetValidatorBalancesRequestObject) (platformapi.GetValidatorBalancesResponseObject, error) {
	n, err := s.node(ctx, "getValidatorBalances", req.Name)
	if err != nil {
		return nil, err
	}
	out, err := balances(ctx, n)
	if err != nil {
		msg := err.Error()
		if up, ok := err.(*domain.UpstreamError); ok {
			msg = up.Message
		}
		s.logUpstream(ctx, "getValidatorBalances", err)
		out.Error = &msg // balances sets the figures only when it succeeds
	}
	return platformapi.GetValidatorBalances200JSONResponse(out), nil
}

func balances(ctx context.Context, n *upstream.Node) (platformapi.ValidatorBalances, error) {
	var out platformapi.ValidatorBalances
	who, err := n.Validator.GetValidatorUserInfoWithResponse(ctx)
	if err := answered(upstream.ValidatorApp, n.Target.ValidatorAppURL, err, func() (*http.Response, []byte) { return who.HTTPResponse, who.Body }); err != nil {
		return out, err
	}
	if who.JSON200 == nil {
		return out, fmt.Errorf("the validator app did not name the validator party")
	}
	party := who.JSON200.PartyId
	out.PartyId = &party
	snap, err := n.Scan.GetDateOfMostRecentSnapshotBeforeWithResponse(ctx, &scanapi.GetDateOfMostRecentSnapshotBeforeParams{Before: time.Now().UTC(), MigrationId: n.Target.MigrationID})
	if err := answered(upstream.Scan, n.Target.ScanURL, err, func() (*http.Response, []byte) { return snap.HTTPResponse, snap.Body }); err != nil {
		return out, err
	}
	if snap.JSON200 == nil {
		return out, fmt.Errorf("the scan service answered no snapshot time")
	}
	sum, err := n.Scan.GetHoldingsSummaryAtWithResponse(ctx, scanapi.HoldingsSummaryRequest{
		MigrationId: n.Target.MigrationID, RecordTime: snap.JSON200.RecordTime, OwnerPartyIds: []string{party},
	})
	if err := answered(upstream.Scan, n.Target.ScanURL, err, func() (*http.Response, []byte) { return sum.HTTPResponse, sum.Body }); err != nil {
		return out, err
	}
	if sum.JSON200 == nil {
		return out, fmt.Errorf("the scan service answered no holdings summary")
	}
	for _, h := range sum.JSON200.Summaries {
		if h.PartyId != party {
			continue
		}
		rt, mig, round := sum.JSON200.RecordTime, sum.JSON200.MigrationId, sum.JSON200.ComputedAsOfRound
		out.RecordTime, out.MigrationId, out.ComputedAsOfRound = &rt, &mig, &round
		out.TotalUnlockedCoin, out.TotalLockedCoin, out.TotalCoinHoldings = &h.TotalUnlockedCoin, &h.TotalLockedCoin, &h.TotalCoinHoldings
		out.AccumulatedHoldingFeesUnlocked, out.AccumulatedHoldingFeesLocked, out.AccumulatedHoldingFeesTotal = &h.AccumulatedHoldingFeesUnlocked, &h.AccumulatedHoldingFeesLocked, &h.AccumulatedHoldingFeesTotal
		out.TotalAvailableCoin = &h.TotalAvailableCoin
		return out, nil
	}
	return out, fmt.Errorf("the scan service's holdings summary has no entry for the validator party")
}

// GetValidatorTrafficStatus passes through scan's traffic status of the
// ledger's participant on the synchronizer it is connected to.
func (s *Server) GetValidatorTrafficStatus(ctx context.Context, req platformapi.GetValidatorTrafficStatusRequestObject) (platformapi.GetValidatorTrafficStatusResponseObject, error) {
	n, err := s.node(ctx, "getValidatorTrafficStatus", req.Name)
	if err != nil {
		return nil, err
	}
	pid, err := participantID(ctx, n)
	if err != nil {
		return nil, err
	}
	sync, err := connectedSynchronizer(ctx, n)
	if err != nil {
		return nil, err
	}
	resp, err := n.Scan.GetMemberTrafficStatusWithResponse(ctx, sync, "PAR::"+pid)
	return relay[platformapi.GetValidatorTrafficStatus200JSONResponse](n, upstream.Scan, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body })
}

// GetIdentityDump streams the validator app's identities dump to the
// client as it arrives: the body is a private key export, so it is never
// held whole, logged or cached.
func (s *Server) GetIdentityDump(ctx context.Context, req platformapi.GetIdentityDumpRequestObject) (platformapi.GetIdentityDumpResponseObject, error) {
	n, err := s.node(ctx, "getIdentityDump", req.Name)
	if err != nil {
		return nil, err
	}
	resp, err := n.Validator.DumpParticipantIdentities(ctx)
	if err != nil {
		return nil, upstream.Check(upstream.ValidatorApp, nil, nil, err, n.Target.ValidatorAppURL)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		// An error answer carries no key material; read a bounded part for the message.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, upstream.Check(upstream.ValidatorApp, resp, b, nil, n.Target.ValidatorAppURL)
	}
	noStore := "no-store"
	disposition := fmt.Sprintf("attachment; filename=%q", req.Name+"-participant-identities.json")
	return identityDump{GetIdentityDump200ApplicationoctetStreamResponse: platformapi.GetIdentityDump200ApplicationoctetStreamResponse{
		Body:          resp.Body, // closed by the response writer
		ContentLength: max(resp.ContentLength, 0),
		Headers:       platformapi.GetIdentityDump200ResponseHeaders{CacheControl: &noStore, ContentDisposition: &disposition},
	}, log: s.Logger}, nil
}

// identityDump is getIdentityDump's 200, streamed as the validator app sends
// it. A stream that fails after the header went out aborts the answer: a
// chunked answer would otherwise end as if whole, and the client keep a cut
// private key export for a backup.
type identityDump struct {
	platformapi.GetIdentityDump200ApplicationoctetStreamResponse
	log *slog.Logger
}

func (d identityDump) VisitGetIdentityDumpResponse(w http.ResponseWriter) error {
	err := d.GetIdentityDump200ApplicationoctetStreamResponse.VisitGetIdentityDumpResponse(w)
	if err != nil {
		d.log.Warn("identity dump cut: the answer is aborted so the client sees it", "error", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
