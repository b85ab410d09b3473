package platform

import (
	"context"
	"net/http"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/etag"
)

// Resources is the cluster's cached view of the Validator and Application
// resources of the watched namespace. The JSON is encoded once per change
// of a resource (minus metadata.managedFields), so a read costs a copy.
type Resources interface {
	// ResourceList is every resource of kind, as a JSON array sorted by
	// namespace then name.
	ResourceList(kind domain.ResourceKind) ([]byte, error)
	// ResourceListVersion changes whenever ResourceList's answer would
	// (the lists' ETag); read it before the list, so that a change between
	// the two leaves the tag older than the list, never newer.
	ResourceListVersion(kind domain.ResourceKind) (string, error)
	// ResourceObject is one resource as JSON; domain.ErrNotFound when absent.
	ResourceObject(kind domain.ResourceKind, name string) ([]byte, error)
	// ResourceStatus is one resource's status as JSON ({} when none).
	ResourceStatus(kind domain.ResourceKind, name string) ([]byte, error)
	// ApplicationMetrics is the resource use of the named applications
	// (every one when none is named), sorted by name.
	ApplicationMetrics(ctx context.Context, names ...string) ([]domain.ApplicationMetrics, error)
}

// rawJSON is a 200 answer whose body the cache has already encoded (the
// contract's resources and ResourceStatus are open objects): writing it as
// it is spares a decode and an encode of every resource on every read.
type rawJSON []byte

func (b rawJSON) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

func (b rawJSON) VisitGetValidatorResponse(w http.ResponseWriter) error         { return b.write(w) }
func (b rawJSON) VisitGetValidatorStatusResponse(w http.ResponseWriter) error   { return b.write(w) }
func (b rawJSON) VisitGetApplicationResponse(w http.ResponseWriter) error       { return b.write(w) }
func (b rawJSON) VisitGetApplicationStatusResponse(w http.ResponseWriter) error { return b.write(w) }

func (s *Server) ListValidators(ctx context.Context, req platformapi.ListValidatorsRequestObject) (platformapi.ListValidatorsResponseObject, error) {
	return s.list(domain.KindValidator, req.Params.IfNoneMatch)
}

func (s *Server) GetValidator(ctx context.Context, req platformapi.GetValidatorRequestObject) (platformapi.GetValidatorResponseObject, error) {
	return s.read(Resources.ResourceObject, domain.KindValidator, req.Name)
}

func (s *Server) GetValidatorStatus(ctx context.Context, req platformapi.GetValidatorStatusRequestObject) (platformapi.GetValidatorStatusResponseObject, error) {
	return s.read(Resources.ResourceStatus, domain.KindValidator, req.Name)
}

func (s *Server) ListApplications(ctx context.Context, req platformapi.ListApplicationsRequestObject) (platformapi.ListApplicationsResponseObject, error) {
	return s.list(domain.KindApplication, req.Params.IfNoneMatch)
}

func (s *Server) GetApplication(ctx context.Context, req platformapi.GetApplicationRequestObject) (platformapi.GetApplicationResponseObject, error) {
	return s.read(Resources.ResourceObject, domain.KindApplication, req.Name)
}

func (s *Server) GetApplicationStatus(ctx context.Context, req platformapi.GetApplicationStatusRequestObject) (platformapi.GetApplicationStatusResponseObject, error) {
	return s.read(Resources.ResourceStatus, domain.KindApplication, req.Name)
}

// WatchValidators is never routed: the stream is served by a plain handler
// (live.Stream) that writes Server-Sent Events as they come.
func (s *Server) WatchValidators(ctx context.Context, req platformapi.WatchValidatorsRequestObject) (platformapi.WatchValidatorsResponseObject, error) {
	return nil, notWired("watchValidators", "the validators' watch stream")
}

func (s *Server) resources() (Resources, error) {
	if s.Resources == nil {
		return nil, notWired("cluster reads", "the cluster resource reader (Validator/Application informers)")
	}
	return s.Resources, nil
}

// listAnswer is a list with its ETag.
type listAnswer struct {
	body rawJSON
	tag  string
}

func (a listAnswer) write(w http.ResponseWriter) error {
	w.Header().Set("ETag", a.tag)
	return a.body.write(w)
}

func (a listAnswer) VisitListValidatorsResponse(w http.ResponseWriter) error   { return a.write(w) }
func (a listAnswer) VisitListApplicationsResponse(w http.ResponseWriter) error { return a.write(w) }

// list answers every resource of kind, or 304 when ifNoneMatch names the
// list's tag (then the list is not even read).
func (s *Server) list(kind domain.ResourceKind, ifNoneMatch *string) (interface {
	platformapi.ListValidatorsResponseObject
	platformapi.ListApplicationsResponseObject
}, error) {
	r, err := s.resources()
	if err != nil {
		return nil, err
	}
	version, err := r.ResourceListVersion(kind)
	if err != nil {
		return nil, err
	}
	tag := etag.Of("2.0", string(kind), version)
	if ifNoneMatch != nil && etag.Match(*ifNoneMatch, tag) {
		return platformapi.NotModifiedResponse{Headers: platformapi.NotModifiedResponseHeaders{ETag: &tag}}, nil
	}
	body, err := r.ResourceList(kind)
	if err != nil {
		return nil, err
	}
	return listAnswer{body: body, tag: tag}, nil
}

// read is one resource's JSON as get (ResourceObject or ResourceStatus) reads it.
func (s *Server) read(get func(Resources, domain.ResourceKind, string) ([]byte, error), kind domain.ResourceKind, name string) (rawJSON, error) {
	r, err := s.resources()
	if err != nil {
		return nil, err
	}
	return get(r, kind, name)
}

// applicationMetrics maps the cluster's figures to the contract's shape.
func applicationMetrics(m domain.ApplicationMetrics) platformapi.ApplicationMetrics {
	return platformapi.ApplicationMetrics{
		Name:             m.Name,
		Namespace:        m.Namespace,
		MetricsAvailable: m.Available,
		Cpu: platformapi.CpuMetrics{
			UsageMillicores:   m.CPUUsage,
			RequestMillicores: m.CPURequest,
			LimitMillicores:   m.CPULimit,
		},
		Memory: platformapi.MemoryMetrics{
			UsageBytes:   m.MemoryUsage,
			RequestBytes: m.MemoryRequest,
			LimitBytes:   m.MemoryLimit,
		},
	}
}
