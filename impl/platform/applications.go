package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platform"
)

func (s *Server) ListApplications(ctx context.Context, req platform.ListApplicationsRequestObject) (platform.ListApplicationsResponseObject, error) {
	return nil, notBuilt("listApplications", needsCluster)
}

func (s *Server) GetApplication(ctx context.Context, req platform.GetApplicationRequestObject) (platform.GetApplicationResponseObject, error) {
	return nil, notBuilt("getApplication", needsCluster)
}

func (s *Server) GetApplicationStatus(ctx context.Context, req platform.GetApplicationStatusRequestObject) (platform.GetApplicationStatusResponseObject, error) {
	return nil, notBuilt("getApplicationStatus", needsCluster)
}
