package platform

import (
	"context"
	"encoding/json"
	"net/http"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// Upstreams hands out the generated clients of a validator's nodes;
// domain.ErrNotFound for an unknown validator.
type Upstreams interface {
	For(ctx context.Context, validator string) (*upstream.Node, error)
}

// node resolves validator's nodes. A name no Kubernetes object can have
// ("a/b", "..", upper case) is a 404, as getValidator answers it, before
// client-go refuses it with an error of its own (a 500).
func (s *Server) node(ctx context.Context, operation, validator string) (*upstream.Node, error) {
	if s.Upstreams == nil {
		return nil, notWired(operation, "the upstream proxy (ledger JSON API, scan, validator app)")
	}
	if len(validation.IsDNS1123Subdomain(validator)) > 0 {
		return nil, domain.NotFound("validator %q not found", validator)
	}
	return s.Upstreams.For(ctx, validator)
}

// answered turns a generated client's result into an error: no answer
// (err), or a status other than 2xx. res reads the result, which exists
// only when err is nil; base is shown when the request URL is unknown.
func answered(up, base string, err error, res func() (*http.Response, []byte)) error {
	if err != nil {
		return upstream.Check(up, nil, nil, err, base)
	}
	hr, b := res()
	return upstream.Check(up, hr, b, nil, base)
}

// relay checks a call to one of n's upstreams (answered) and decodes its
// JSON answer into T, the response type that passes it on.
func relay[T any](n *upstream.Node, up string, err error, res func() (*http.Response, []byte)) (T, error) {
	base, name := n.Target.ValidatorAppURL, "validator app"
	switch up {
	case upstream.Ledger:
		base, name = n.Target.LedgerURL, "ledger API"
	case upstream.Scan:
		base, name = n.Target.ScanURL, "scan service"
	}
	var out T
	if err := answered(up, base, err, res); err != nil {
		return out, err
	}
	hr, body := res()
	return out, passThrough(name, hr.Request.URL.String(), body, &out)
}

// passThrough decodes an upstream's JSON answer into the response type
// that passes it on (unknown fields kept where the type keeps them).
func passThrough(up, endpoint string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &domain.UpstreamError{Endpoint: upstream.Call{URL: endpoint}.Endpoint(), Message: "the " + up + " answered with a body that does not match its description", Cause: err}
	}
	return nil
}

// logUpstream logs a failure the response does not carry as an error
// status (a section of a view that still answers 200).
func (s *Server) logUpstream(ctx context.Context, operation string, err error) {
	s.Logger.WarnContext(ctx, "upstream call failed", "operation", operation, "error", err)
}

// unexpectedAnswer is a 2xx answer of the ledger that lacks what its description promises.
func unexpectedAnswer(endpoint, what string) error {
	return &domain.UpstreamError{Endpoint: upstream.Call{URL: endpoint}.Endpoint(), Message: "the ledger API answered " + what}
}

// participantID asks the ledger for its participant's id (GET /v2/parties/participant-id).
func participantID(ctx context.Context, n *upstream.Node) (string, error) {
	r, err := n.Ledger.GetV2PartiesParticipantIdWithResponse(ctx)
	if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return r.HTTPResponse, r.Body }); err != nil {
		return "", err
	}
	if r.JSON200 == nil || r.JSON200.ParticipantId == "" {
		return "", unexpectedAnswer(r.HTTPResponse.Request.URL.String(), "no participant id")
	}
	return r.JSON200.ParticipantId, nil
}

// connectedSynchronizer is the first synchronizer the ledger says its
// participant is connected to (GET /v2/state/connected-synchronizers); none
// is a 502.
func connectedSynchronizer(ctx context.Context, n *upstream.Node) (string, error) {
	r, err := n.Ledger.GetV2StateConnectedSynchronizersWithResponse(ctx, nil)
	if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return r.HTTPResponse, r.Body }); err != nil {
		return "", err
	}
	if r.JSON200 == nil || r.JSON200.ConnectedSynchronizers == nil || len(*r.JSON200.ConnectedSynchronizers) == 0 {
		return "", &domain.UpstreamError{Endpoint: upstream.Call{URL: r.HTTPResponse.Request.URL.String()}.Endpoint(), Message: "the participant is not connected to a synchronizer"}
	}
	return (*r.JSON200.ConnectedSynchronizers)[0].SynchronizerId, nil
}
