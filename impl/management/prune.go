package management

import (
	"context"
	"errors"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/schedule"
)

// GetPruneSchedule answers {} when the validator has no schedule.
func (s *Server) GetPruneSchedule(ctx context.Context, req managementapi.GetPruneScheduleRequestObject) (managementapi.GetPruneScheduleResponseObject, error) {
	p, ok, err := s.pruneSchedule(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return managementapi.GetPruneSchedule200JSONResponse{}, nil
	}
	out := managementapi.GetPruneSchedule200JSONResponse{
		Cron:        ptr.To(p.Cron),
		MaxDuration: ptr.To(p.MaxDurationText),
		Retention:   ptr.To(p.RetentionText),
	}
	if c, err := schedule.ParsePrune(p.Cron); err == nil {
		if next, ok := c.Next(s.Now()); ok {
			out.NextRun = ptr.To(next.UTC())
		}
	}
	return out, nil
}

func (s *Server) CreatePruneSchedule(ctx context.Context, req managementapi.CreatePruneScheduleRequestObject) (managementapi.CreatePruneScheduleResponseObject, error) {
	if _, err := s.Store.GetValidator(ctx, req.Name); err != nil {
		return nil, err
	}
	if err := s.writePrune(ctx, req.Name, "prune.create", *req.Body, s.Store.CreatePruneSchedule); err != nil {
		return nil, err
	}
	return managementapi.CreatePruneSchedule201Response{}, nil
}

func (s *Server) UpdatePruneSchedule(ctx context.Context, req managementapi.UpdatePruneScheduleRequestObject) (managementapi.UpdatePruneScheduleResponseObject, error) {
	if _, err := s.Store.GetValidator(ctx, req.Name); err != nil {
		return nil, err
	}
	if _, err := s.Store.GetPruneSchedule(ctx, req.Name); err != nil {
		return nil, err
	}
	if err := s.writePrune(ctx, req.Name, "prune.update", *req.Body, s.Store.UpdatePruneSchedule); err != nil {
		return nil, err
	}
	return managementapi.UpdatePruneSchedule204Response{}, nil
}

// writePrune checks a create's or an update's schedule and records the write.
func (s *Server) writePrune(ctx context.Context, validator, op string, dto managementapi.ScheduledValidatorPruneDto, write func(context.Context, *domain.PruneSchedule) error) error {
	p, err := parsePrune(validator, dto)
	if err != nil {
		return err
	}
	return s.record(ctx, validator, op, func(ctx context.Context) error { return write(ctx, &p) })
}

// DeletePruneSchedule is idempotent: deleting an absent schedule is a no-op.
func (s *Server) DeletePruneSchedule(ctx context.Context, req managementapi.DeletePruneScheduleRequestObject) (managementapi.DeletePruneScheduleResponseObject, error) {
	_, ok, err := s.pruneSchedule(ctx, req.Name)
	if ok {
		err = s.record(ctx, req.Name, "prune.delete",
			func(ctx context.Context) error { return s.Store.DeletePruneSchedule(ctx, req.Name) })
	}
	if err != nil {
		return nil, err
	}
	return managementapi.DeletePruneSchedule204Response{}, nil
}

// pruneSchedule reads the validator's pruning schedule; ok is false when it
// has none. An absent validator is 404.
func (s *Server) pruneSchedule(ctx context.Context, validator string) (p domain.PruneSchedule, ok bool, err error) {
	if _, err := s.Store.GetValidator(ctx, validator); err != nil {
		return p, false, err
	}
	p, err = s.Store.GetPruneSchedule(ctx, validator)
	if isNotFound(err) {
		return p, false, nil
	}
	return p, err == nil, err
}

// parsePrune checks a schedule as Canton will: Quartz cron, positive
// whole-second durations.
func parsePrune(validator string, dto managementapi.ScheduledValidatorPruneDto) (domain.PruneSchedule, error) {
	var bad domain.Invalids
	if _, err := schedule.ParsePrune(dto.Cron); err != nil {
		bad = append(bad, domain.Invalid("cron", "%v", err))
	}
	maxDuration, err := schedule.ParseDuration(dto.MaxDuration)
	if err != nil {
		bad = append(bad, domain.Invalid("maxDuration", "%v", err))
	}
	retention, err := schedule.ParseDuration(dto.Retention)
	if err != nil {
		bad = append(bad, domain.Invalid("retention", "%v", err))
	}
	return domain.PruneSchedule{
		Validator:       validator,
		Cron:            dto.Cron,
		MaxDuration:     maxDuration,
		Retention:       retention,
		MaxDurationText: dto.MaxDuration,
		RetentionText:   dto.Retention,
	}, bad.Err()
}

// pruneFromCreate reads the optional schedule of a create payload; its
// errors are keyed under clusterConfig.scheduledPrune.
func pruneFromCreate(dto managementapi.ValidatorDto) (*domain.PruneSchedule, error) {
	sp := dto.ClusterConfig.ScheduledPrune
	if sp == nil {
		return nil, nil
	}
	p, err := parsePrune(dto.Name, *sp)
	var bad domain.Invalids
	if errors.As(err, &bad) {
		for _, e := range bad {
			e.Field = "clusterConfig.scheduledPrune." + e.Field
		}
		return nil, bad
	}
	return &p, err
}
