package management

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/management"
)

func (s *Server) GetPruneSchedule(ctx context.Context, req management.GetPruneScheduleRequestObject) (management.GetPruneScheduleResponseObject, error) {
	return nil, notBuilt("getPruneSchedule")
}

func (s *Server) CreatePruneSchedule(ctx context.Context, req management.CreatePruneScheduleRequestObject) (management.CreatePruneScheduleResponseObject, error) {
	return nil, notBuilt("createPruneSchedule")
}

func (s *Server) UpdatePruneSchedule(ctx context.Context, req management.UpdatePruneScheduleRequestObject) (management.UpdatePruneScheduleResponseObject, error) {
	return nil, notBuilt("updatePruneSchedule")
}

func (s *Server) DeletePruneSchedule(ctx context.Context, req management.DeletePruneScheduleRequestObject) (management.DeletePruneScheduleResponseObject, error) {
	return nil, notBuilt("deletePruneSchedule")
}
