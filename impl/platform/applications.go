package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

func (s *Server) ListApplications(ctx context.Context, req platformapi.ListApplicationsRequestObject) (platformapi.ListApplicationsResponseObject, error) {
	return nil, notBuilt("listApplications", needsCluster)
}

func (s *Server) GetApplication(ctx context.Context, req platformapi.GetApplicationRequestObject) (platformapi.GetApplicationResponseObject, error) {
	return nil, notBuilt("getApplication", needsCluster)
}

func (s *Server) GetApplicationStatus(ctx context.Context, req platformapi.GetApplicationStatusRequestObject) (platformapi.GetApplicationStatusResponseObject, error) {
	return nil, notBuilt("getApplicationStatus", needsCluster)
}
