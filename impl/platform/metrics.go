package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

// ListApplicationMetrics answers the resource use of every application.
func (s *Server) ListApplicationMetrics(ctx context.Context, req platformapi.ListApplicationMetricsRequestObject) (platformapi.ListApplicationMetricsResponseObject, error) {
	ms, err := s.metrics(ctx)
	if err != nil {
		return nil, err
	}
	return platformapi.ListApplicationMetrics200JSONResponse(ms), nil
}

// GetApplicationMetrics answers the resource use of one application.
func (s *Server) GetApplicationMetrics(ctx context.Context, req platformapi.GetApplicationMetricsRequestObject) (platformapi.GetApplicationMetricsResponseObject, error) {
	ms, err := s.metrics(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return platformapi.GetApplicationMetrics200JSONResponse(ms[0]), nil
}

// metrics answers the resource use of the named applications (all without names).
func (s *Server) metrics(ctx context.Context, names ...string) ([]platformapi.ApplicationMetrics, error) {
	r, err := s.resources()
	if err != nil {
		return nil, err
	}
	ms, err := r.ApplicationMetrics(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make([]platformapi.ApplicationMetrics, 0, len(ms))
	for _, m := range ms {
		out = append(out, applicationMetrics(m))
	}
	return out, nil
}
