package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) ListApplicationMetrics(ctx context.Context, req platformapi.ListApplicationMetricsRequestObject) (platformapi.ListApplicationMetricsResponseObject, error) {
	return nil, notBuilt("listApplicationMetrics", needsMetrics)
}

func (s *Server) GetApplicationMetrics(ctx context.Context, req platformapi.GetApplicationMetricsRequestObject) (platformapi.GetApplicationMetricsResponseObject, error) {
	return nil, notBuilt("getApplicationMetrics", needsMetrics)
}
