package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// ListApplications answers every Application resource of the namespace, from the cache.
func (s *Server) ListApplications(ctx context.Context, req platformapi.ListApplicationsRequestObject) (platformapi.ListApplicationsResponseObject, error) {
	return s.list(domain.KindApplication, req.Params.IfNoneMatch)
}

// GetApplication answers one Application resource, from the cache.
func (s *Server) GetApplication(ctx context.Context, req platformapi.GetApplicationRequestObject) (platformapi.GetApplicationResponseObject, error) {
	return s.object(domain.KindApplication, req.Name)
}

// GetApplicationStatus answers an Application resource's status, from the cache.
func (s *Server) GetApplicationStatus(ctx context.Context, req platformapi.GetApplicationStatusRequestObject) (platformapi.GetApplicationStatusResponseObject, error) {
	return s.status(domain.KindApplication, req.Name)
}
