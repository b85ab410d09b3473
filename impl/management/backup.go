package management

import (
	"context"
	"strconv"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/schedule"
)

// defaultBackupCron runs a backup daily at midnight UTC.
const defaultBackupCron = "0 0 * * *"

// CreateBackupSchedule: absent -> active (database must run), soft-deleted ->
// active (reactivated), active -> 409.
func (s *Server) CreateBackupSchedule(ctx context.Context, req managementapi.CreateBackupScheduleRequestObject) (managementapi.CreateBackupScheduleResponseObject, error) {
	v, err := s.backupValidator(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	b, err := parseBackup(req.Name, *req.Body)
	if err != nil {
		return nil, err
	}
	old, err := s.Store.GetBackupSchedule(ctx, req.Name)
	switch {
	case isNotFound(err):
		state, err := s.Cluster.ValidatorState(ctx, v.Name)
		if err != nil && !isNotFound(err) {
			return nil, err
		}
		if !state.DatabaseRunning {
			return nil, domain.Unavailable("the database of validator %q is not running yet", v.Name)
		}
	case err != nil:
		return nil, err
	case !old.Deleted:
		return nil, domain.Conflict("validator %q already has an active backup schedule; change it with PUT", v.Name)
	}
	// The write itself refuses an active schedule: another POST may have
	// created one since the read above.
	err = s.record(ctx, b.Validator, "backup.save",
		func(ctx context.Context) error { return s.Store.CreateBackupSchedule(ctx, &b) })
	if err != nil {
		return nil, err
	}
	return managementapi.CreateBackupSchedule201JSONResponse(s.backupResponse(b)), nil
}

// GetBackupSchedule: 404 when absent or soft-deleted.
func (s *Server) GetBackupSchedule(ctx context.Context, req managementapi.GetBackupScheduleRequestObject) (managementapi.GetBackupScheduleResponseObject, error) {
	b, err := s.activeBackup(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return managementapi.GetBackupSchedule200JSONResponse(s.backupResponse(b)), nil
}

// UpdateBackupSchedule replaces cron and retention; it also reactivates a
// soft-deleted schedule. 404 only when there is no record at all.
func (s *Server) UpdateBackupSchedule(ctx context.Context, req managementapi.UpdateBackupScheduleRequestObject) (managementapi.UpdateBackupScheduleResponseObject, error) {
	if _, err := s.backupValidator(ctx, req.Name); err != nil {
		return nil, err
	}
	if _, err := s.Store.GetBackupSchedule(ctx, req.Name); err != nil {
		if isNotFound(err) {
			return nil, domain.NotFound("validator %q has no backup schedule", req.Name)
		}
		return nil, err
	}
	b, err := parseBackup(req.Name, *req.Body)
	if err != nil {
		return nil, err
	}
	err = s.record(ctx, b.Validator, "backup.save",
		func(ctx context.Context) error { return s.Store.SaveBackupSchedule(ctx, &b) })
	if err != nil {
		return nil, err
	}
	return managementapi.UpdateBackupSchedule200JSONResponse(s.backupResponse(b)), nil
}

// DeleteBackupSchedule soft-deletes: the record stays, the CronJob is
// suspended, no further backups run.
func (s *Server) DeleteBackupSchedule(ctx context.Context, req managementapi.DeleteBackupScheduleRequestObject) (managementapi.DeleteBackupScheduleResponseObject, error) {
	if _, err := s.activeBackup(ctx, req.Name); err != nil {
		return nil, err
	}
	err := s.record(ctx, req.Name, "backup.delete",
		func(ctx context.Context) error { return s.Store.SoftDeleteBackupSchedule(ctx, req.Name) })
	if err != nil {
		return nil, err
	}
	return managementapi.DeleteBackupSchedule204Response{}, nil
}

// backupValidator returns the validator, refusing one with an external
// database: backups cover the internal database only.
func (s *Server) backupValidator(ctx context.Context, name string) (domain.Validator, error) {
	v, err := s.Store.GetValidator(ctx, name)
	if err != nil {
		return v, err
	}
	if v.ExternalDatabase {
		return v, domain.Invalid("name", "validator %q uses an external database; backup schedules cover the internal database only", name)
	}
	return v, nil
}

// activeBackup reads the validator's active backup schedule: 404 when the
// validator, or such a schedule of it, is absent.
func (s *Server) activeBackup(ctx context.Context, name string) (domain.BackupSchedule, error) {
	if _, err := s.Store.GetValidator(ctx, name); err != nil {
		return domain.BackupSchedule{}, err
	}
	b, err := s.Store.GetBackupSchedule(ctx, name)
	switch {
	case isNotFound(err):
		return b, domain.NotFound("validator %q has no backup schedule", name)
	case err == nil && b.Deleted:
		return b, domain.NotFound("the backup schedule of validator %q was deleted", name)
	}
	return b, err
}

func parseBackup(validator string, dto managementapi.ValidatorBackupDto) (domain.BackupSchedule, error) {
	cron := ptr.Deref(dto.Cron, defaultBackupCron)
	if _, err := schedule.ParseBackup(cron); err != nil {
		return domain.BackupSchedule{}, domain.Invalid("cron", "%v", err)
	}
	return domain.BackupSchedule{Validator: validator, Cron: cron, MaxBackups: dto.MaxBackups}, nil
}

func (s *Server) backupResponse(b domain.BackupSchedule) managementapi.ScheduledValidatorBackupDto {
	out := managementapi.ScheduledValidatorBackupDto{Cron: b.Cron, MaxBackups: ptr.To(b.MaxBackups)}
	if c, err := schedule.ParseBackup(b.Cron); err == nil {
		out.NextRun = ptr.To(strconv.FormatInt(c.Next(s.Now()).Unix(), 10))
	}
	return out
}
