package store

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// CreateRemoteParticipant inserts a registration and sets its timestamps.
func (s *Store) CreateRemoteParticipant(ctx context.Context, p *domain.RemoteParticipant) error {
	row := participantFrom(p)
	row.CreatedAt = now()
	row.UpdatedAt = row.CreatedAt
	if row.LastCheckedAt != nil {
		at := stamp(*row.LastCheckedAt)
		row.LastCheckedAt = &at
	}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return translate(err, participantWhat(p.Name), "")
	}
	*p = row.domain()
	return nil
}

// GetRemoteParticipant reads one registration.
func (s *Store) GetRemoteParticipant(ctx context.Context, name string) (domain.RemoteParticipant, error) {
	return take[participantRow](s.db.WithContext(ctx), participantWhat(name), "name = ?", name)
}

// UpdateRemoteParticipant replaces the registration's columns. The health
// columns are left alone: only RecordParticipantHealth writes them.
func (s *Store) UpdateRemoteParticipant(ctx context.Context, p *domain.RemoteParticipant) error {
	row := participantFrom(p)
	row.UpdatedAt = now()
	return update(s.db.WithContext(ctx), &row, p, participantWhat(p.Name),
		"spec", "phase", "admin_address", "admin_port", "ledger_address", "ledger_port", "updated_at")
}

// DeleteRemoteParticipant removes a registration.
func (s *Store) DeleteRemoteParticipant(ctx context.Context, name string) error {
	res := s.db.WithContext(ctx).Delete(&participantRow{}, "name = ?", name)
	return affected(res, participantWhat(name))
}

// ListRemoteParticipants returns one page ordered by name and the number of
// registrations that match the filter.
func (s *Store) ListRemoteParticipants(ctx context.Context, f domain.RemoteParticipantFilter) ([]domain.RemoteParticipant, int64, error) {
	if err := checkPage(f.Page); err != nil {
		return nil, 0, err
	}
	filter := func(tx *gorm.DB) *gorm.DB {
		if f.NameContains != "" {
			tx = tx.Where(s.contains("name", f.NameContains))
		}
		if f.Phase != "" {
			tx = tx.Where("phase = ?", string(f.Phase))
		}
		if f.Healthy != nil {
			// NULL (never checked) equals neither true nor false.
			tx = tx.Where("healthy = ?", *f.Healthy)
		}
		return tx
	}
	total, err := count[participantRow](ctx, s.db, filter)
	if err != nil {
		return nil, 0, translate(err, "list remote participants", "")
	}
	rows, err := page[participantRow](ctx, s.db, filter, f.Page, total)
	if err != nil {
		return nil, 0, translate(err, "list remote participants", "")
	}
	return domains(rows), total, nil
}

// RecordParticipantHealth stores the outcome of a health check. updated_at
// is left alone: it dates the registration, not the checks.
func (s *Store) RecordParticipantHealth(ctx context.Context, name string, healthy bool, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&participantRow{}).Where("name = ?", name).
		UpdateColumns(map[string]any{"healthy": healthy, "last_checked_at": stamp(at)})
	return affected(res, participantWhat(name))
}

// ForgetParticipantHealth clears the health record: the participant is not
// probed (the outbound address policy refuses its admin address), so no
// earlier result stands for its health.
func (s *Store) ForgetParticipantHealth(ctx context.Context, name string) error {
	res := s.db.WithContext(ctx).Model(&participantRow{}).Where("name = ?", name).
		UpdateColumns(map[string]any{"healthy": nil, "last_checked_at": nil})
	return affected(res, participantWhat(name))
}
