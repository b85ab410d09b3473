package store

// Runs recorded by hand: production records runs only as the runs
// controller observes their Jobs (ObserveRun); the store's tests start and
// finish runs directly.

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func runWhat(id int64) string { return fmt.Sprintf("run %d", id) }

// RecordRun stores the start of a backup or pruning run and sets r.ID;
// a zero StartedAt means now.
func (s *Store) RecordRun(ctx context.Context, r *domain.Run) error {
	if err := checkRunKind(r.Kind); err != nil {
		return err
	}
	row := runRowOf(*r)
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return translate(err, fmt.Sprintf("%s run of validator %q", r.Kind, r.Validator), r.Validator)
	}
	*r = row.domain()
	return nil
}

// FinishRun records the outcome of a started run: domain.ErrNotFound for an
// unknown id, domain.ErrConflict when the run is already finished.
func (s *Store) FinishRun(ctx context.Context, id int64, succeeded bool, message string, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&runRow{}).Where("id = ? AND finished_at IS NULL", id).
		UpdateColumns(map[string]any{"finished_at": stamp(at), "succeeded": succeeded, "message": message})
	if res.Error != nil {
		return translate(res.Error, runWhat(id), "")
	}
	if res.RowsAffected > 0 {
		return nil
	}
	var n int64
	if err := s.db.WithContext(ctx).Model(&runRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return translate(err, runWhat(id), "")
	}
	if n == 0 {
		return translate(gorm.ErrRecordNotFound, runWhat(id), "")
	}
	return domain.Conflict("%s is already finished", runWhat(id))
}
