package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) ListApplicationMetrics(ctx context.Context, req platform.ListApplicationMetricsRequestObject) (platform.ListApplicationMetricsResponseObject, error) {
	return nil, notBuilt("listApplicationMetrics", needsMetrics)
}

func (s *Server) GetApplicationMetrics(ctx context.Context, req platform.GetApplicationMetricsRequestObject) (platform.GetApplicationMetricsResponseObject, error) {
	return nil, notBuilt("getApplicationMetrics", needsMetrics)
}
