package management

import (
	"context"

	"github.com/validator-manager/validator-manager/gen/management"
)

func (s *Server) CreateBackupSchedule(ctx context.Context, req management.CreateBackupScheduleRequestObject) (management.CreateBackupScheduleResponseObject, error) {
	return nil, notBuilt("createBackupSchedule")
}

func (s *Server) GetBackupSchedule(ctx context.Context, req management.GetBackupScheduleRequestObject) (management.GetBackupScheduleResponseObject, error) {
	return nil, notBuilt("getBackupSchedule")
}

func (s *Server) UpdateBackupSchedule(ctx context.Context, req management.UpdateBackupScheduleRequestObject) (management.UpdateBackupScheduleResponseObject, error) {
	return nil, notBuilt("updateBackupSchedule")
}

func (s *Server) DeleteBackupSchedule(ctx context.Context, req management.DeleteBackupScheduleRequestObject) (management.DeleteBackupScheduleResponseObject, error) {
	return nil, notBuilt("deleteBackupSchedule")
}
