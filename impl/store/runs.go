package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func checkRunKind(kind domain.RunKind) error {
	if kind != domain.RunBackup && kind != domain.RunPrune {
		return domain.Invalid("kind", "must be %q or %q, got %q", domain.RunBackup, domain.RunPrune, kind)
	}
	return nil
}

// runRowOf is the row of r; a zero StartedAt means now.
func runRowOf(r domain.Run) runRow {
	row := runRow{Validator: r.Validator, Kind: string(r.Kind), StartedAt: now(), Succeeded: r.Succeeded, Message: r.Message}
	if !r.StartedAt.IsZero() {
		row.StartedAt = stamp(r.StartedAt)
	}
	if r.FinishedAt != nil {
		at := stamp(*r.FinishedAt)
		row.FinishedAt = &at
	}
	if r.JobUID != "" {
		row.JobUID = &r.JobUID
	}
	return row
}

// ObserveRun records what a Job says of its run, keyed by r.JobUID, and sets
// r to the stored run: a later observation replaces a running run's start,
// end, outcome and message; a finished run is final. domain.ErrNotFound
// when the validator is unknown.
func (s *Store) ObserveRun(ctx context.Context, r *domain.Run) error {
	if err := checkRunKind(r.Kind); err != nil {
		return err
	}
	if r.JobUID == "" {
		return domain.Invalid("jobUid", "must not be empty")
	}
	what := fmt.Sprintf("%s run of validator %q", r.Kind, r.Validator)
	row := runRowOf(*r)
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "job_uid"}},
		DoUpdates: clause.AssignmentColumns([]string{"started_at", "finished_at", "succeeded", "message"}),
		Where:     clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "runs.finished_at IS NULL"}}},
	}).Create(&row).Error
	if err != nil {
		return translate(err, what, r.Validator)
	}
	var stored runRow
	if err := s.db.WithContext(ctx).Where("job_uid = ?", r.JobUID).Take(&stored).Error; err != nil {
		return translate(err, what, "")
	}
	*r = stored.domain()
	return nil
}

// ListRuns returns one page of a validator's runs, newest first (by start,
// then by id), and the number of runs that match the filter.
func (s *Store) ListRuns(ctx context.Context, f domain.RunFilter) ([]domain.Run, int64, error) {
	if err := checkPage(f.Page); err != nil {
		return nil, 0, err
	}
	if f.Kind != "" {
		if err := checkRunKind(f.Kind); err != nil {
			return nil, 0, err
		}
	}
	what := fmt.Sprintf("runs of validator %q", f.Validator)
	filter := func(tx *gorm.DB) *gorm.DB {
		tx = tx.Where("validator = ?", f.Validator)
		if f.Kind != "" {
			tx = tx.Where("kind = ?", string(f.Kind))
		}
		return tx
	}
	total, err := count[runRow](ctx, s.db, filter)
	if err != nil {
		return nil, 0, translate(err, what, "")
	}
	if int64(f.Offset) >= total {
		return []domain.Run{}, total, nil
	}
	var rows []runRow
	err = s.db.WithContext(ctx).Scopes(filter).Order("started_at DESC, id DESC").
		Offset(f.Offset).Limit(f.Limit).Find(&rows).Error
	if err != nil {
		return nil, 0, translate(err, what, "")
	}
	return domains(rows), total, nil
}
