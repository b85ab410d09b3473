package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

// ListApplicationMetrics answers the resource use of every application.
func (s *Server) ListApplicationMetrics(ctx context.Context, req platformapi.ListApplicationMetricsRequestObject) (platformapi.ListApplicationMetricsResponseObject, error) {
	r, err := s.resources()
	if err != nil {
		return nil, err
	}
	ms, err := r.ApplicationMetrics(ctx)
	if err != nil {
		return nil, err
	}
	out := make(platformapi.ListApplicationMetrics200JSONResponse, 0, len(ms))
	for _, m := range ms {
		out = append(out, applicationMetrics(m))
	}
	return out, nil
}

// GetApplicationMetrics answers the resource use of one application.
func (s *Server) GetApplicationMetrics(ctx context.Context, req platformapi.GetApplicationMetricsRequestObject) (platformapi.GetApplicationMetricsResponseObject, error) {
	r, err := s.resources()
	if err != nil {
		return nil, err
	}
	ms, err := r.ApplicationMetrics(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return platformapi.GetApplicationMetrics200JSONResponse(applicationMetrics(ms[0])), nil
}
