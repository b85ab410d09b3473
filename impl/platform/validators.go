package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// ListValidators answers every Validator resource of the namespace, from the cache.
func (s *Server) ListValidators(ctx context.Context, req platformapi.ListValidatorsRequestObject) (platformapi.ListValidatorsResponseObject, error) {
	return s.list(domain.KindValidator, req.Params.IfNoneMatch)
}

// GetValidator answers one Validator resource, from the cache.
func (s *Server) GetValidator(ctx context.Context, req platformapi.GetValidatorRequestObject) (platformapi.GetValidatorResponseObject, error) {
	return s.object(domain.KindValidator, req.Name)
}

// GetValidatorStatus answers a Validator resource's status, from the cache.
func (s *Server) GetValidatorStatus(ctx context.Context, req platformapi.GetValidatorStatusRequestObject) (platformapi.GetValidatorStatusResponseObject, error) {
	return s.status(domain.KindValidator, req.Name)
}

// WatchValidators is never routed: the stream is served by a plain handler
// (live.Stream) that writes Server-Sent Events as they come.
func (s *Server) WatchValidators(ctx context.Context, req platformapi.WatchValidatorsRequestObject) (platformapi.WatchValidatorsResponseObject, error) {
	return nil, notWired("watchValidators", "the validators' watch stream")
}
