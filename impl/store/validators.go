package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// RecordCreate inserts v and, when not nil, its pruning schedule in one
// transaction (a create is recorded whole or not at all) and sets their
// timestamps; a second validator of the same name is domain.ErrConflict.
func (s *Store) RecordCreate(ctx context.Context, v *domain.Validator, prune *domain.PruneSchedule) error {
	row := validatorFrom(v)
	row.CreatedAt = now()
	row.UpdatedAt = row.CreatedAt
	var pr pruneRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return translate(err, validatorWhat(v.Name), "")
		}
		if prune == nil {
			return nil
		}
		pr = pruneFrom(prune)
		pr.CreatedAt, pr.UpdatedAt = row.CreatedAt, row.CreatedAt
		return translate(tx.Create(&pr).Error, pruneWhat(v.Name), v.Name)
	})
	if err != nil {
		// The commit's own failure (a full disk) is translated too.
		return translate(err, validatorWhat(v.Name), "")
	}
	v.CreatedAt, v.UpdatedAt = row.CreatedAt, row.UpdatedAt
	if prune != nil {
		prune.CreatedAt, prune.UpdatedAt = pr.CreatedAt, pr.UpdatedAt
	}
	return nil
}

// GetValidator reads one validator.
func (s *Store) GetValidator(ctx context.Context, name string) (domain.Validator, error) {
	return take[validatorRow](s.db.WithContext(ctx), validatorWhat(name), "name = ?", name)
}

// UpdateValidator replaces every column but name and created_at, and reads
// the stored row back into v, if the row's updated_at is still v.UpdatedAt;
// a row written since is a Conflict caused by domain.ErrWrittenMeanwhile, as
// writing v over it would undo that write.
func (s *Store) UpdateValidator(ctx context.Context, v *domain.Validator) error {
	row := validatorFrom(v)
	row.UpdatedAt = now()
	// phase and immutable are the cluster's to say (SyncValidatorState):
	// an edit read before a sync must not put an old phase back.
	err := update(s.db.WithContext(ctx).Where("updated_at = ?", stamp(v.UpdatedAt)), &row, v, validatorWhat(v.Name),
		"custom_auth", "external_database", "database_storage", "migration_id", "migrating", "spec", "list_view",
		"list_view_version", "wallet_user_id", "pending_secrets", "updated_at")
	if !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	if _, err := s.GetValidator(ctx, v.Name); err != nil {
		return err // gone, or the database is
	}
	return &domain.Error{Code: domain.CodeConflict, Message: fmt.Sprintf("validator %q was changed meanwhile; retry", v.Name),
		Cause: domain.ErrWrittenMeanwhile}
}

// DeleteValidator removes a validator; its schedules and runs go with it
// (ON DELETE CASCADE).
func (s *Store) DeleteValidator(ctx context.Context, name string) error {
	res := s.db.WithContext(ctx).Delete(&validatorRow{}, "name = ?", name)
	return affected(res, validatorWhat(name))
}

// ClearPendingSecrets empties the validator's pending secrets if they still
// are sealed, what the leader wrote into its Secrets: an edit recorded
// meanwhile keeps its values for the next reconcile.
func (s *Store) ClearPendingSecrets(ctx context.Context, name, sealed string) error {
	err := s.db.WithContext(ctx).Model(&validatorRow{}).Where("name = ? AND pending_secrets = ?", name, sealed).
		Update("pending_secrets", "").Error
	return translate(err, validatorWhat(name), "")
}

// SetProvisionError records why the validator could not be provisioned
// ("" once it could); unchanged, the row is not written.
func (s *Store) SetProvisionError(ctx context.Context, name, message string) error {
	err := s.db.WithContext(ctx).Model(&validatorRow{}).Where("name = ? AND provision_error <> ?", name, message).
		Update("provision_error", message).Error
	return translate(err, validatorWhat(name), "")
}

// TakeChanges reads and deletes up to limit entries of the change feed
// (validator_changes, filled by triggers on every write of an operator's
// request), returning the names they name, each once.
func (s *Store) TakeChanges(ctx context.Context, limit int) ([]string, error) {
	names, err := s.takeFeed(ctx, "validator_changes", "name", limit)
	return names, translate(err, "take validator changes", "")
}

// takeFeed reads and deletes up to limit rows of a change feed (a table of
// seq and a name column), returning the names, each once, in feed order.
func (s *Store) takeFeed(ctx context.Context, table, column string, limit int) ([]string, error) {
	var names []string
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var rows []struct {
			Seq  int64
			Name string
		}
		if err := tx.Table(table).Select("seq", column+" AS name").Order("seq").Limit(limit).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		seqs := make([]int64, len(rows))
		seen := map[string]bool{}
		for i, r := range rows {
			seqs[i] = r.Seq
			if !seen[r.Name] {
				seen[r.Name] = true
				names = append(names, r.Name)
			}
		}
		return tx.Exec("DELETE FROM "+table+" WHERE seq IN ?", seqs).Error
	})
	return names, err
}

// SetWalletUser records the identity provider's id of the validator's
// wallet user.
func (s *Store) SetWalletUser(ctx context.Context, name, id string) error {
	res := s.db.WithContext(ctx).Model(&validatorRow{}).Where("name = ?", name).Update("wallet_user_id", id)
	return affected(res, validatorWhat(name))
}

// SetProvisionedAuth records what the identity provider made for the
// validator.
func (s *Store) SetProvisionedAuth(ctx context.Context, name string, a domain.ProvisionedAuth) error {
	res := s.db.WithContext(ctx).Model(&validatorRow{}).Where("name = ?", name).Update("provisioned_auth", authText(&a))
	return affected(res, validatorWhat(name))
}

// ValidatorIntent reads one validator with its schedules.
func (s *Store) ValidatorIntent(ctx context.Context, name string) (domain.ValidatorIntent, error) {
	db := s.db.WithContext(ctx)
	var in domain.ValidatorIntent
	var err error
	if in.Validator, err = take[validatorRow](db, validatorWhat(name), "name = ?", name); err != nil {
		return domain.ValidatorIntent{}, err
	}
	if in.Prune, err = optional[pruneRow](db, pruneWhat(name), "validator = ?", name); err != nil {
		return domain.ValidatorIntent{}, err
	}
	if in.Backup, err = optional[backupRow](db.Unscoped(), backupWhat(name), "validator = ?", name); err != nil {
		return domain.ValidatorIntent{}, err
	}
	return in, nil
}

// ValidatorNames reads up to limit names of validators after after, in name
// order.
func (s *Store) ValidatorNames(ctx context.Context, after string, limit int) ([]string, error) {
	var names []string
	err := s.db.WithContext(ctx).Model(&validatorRow{}).Where("name > ?", after).Order("name").Limit(limit).Pluck("name", &names).Error
	return names, translate(err, "read validator names", "")
}

// WalletUsers maps each created validator whose wallet user the identity
// provider made (no custom authentication) to that user's id: start-up
// checks that the provider still holds them.
func (s *Store) WalletUsers(ctx context.Context) (map[string]string, error) {
	var rows []struct{ Name, WalletUserID string }
	err := s.db.WithContext(ctx).Model(&validatorRow{}).Where("wallet_user_id <> ''").Select("name", "wallet_user_id").Find(&rows).Error
	if err != nil {
		return nil, translate(err, "read validators' wallet users", "")
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Name] = r.WalletUserID
	}
	return out, nil
}

// ProvisionedClients names, per validator, the identity provider's clients
// its row records as made for it (provisioned_auth).
func (s *Store) ProvisionedClients(ctx context.Context) (map[string][]string, error) {
	var rows []struct{ Name, ProvisionedAuth string }
	err := s.db.WithContext(ctx).Model(&validatorRow{}).Where("provisioned_auth <> ''").Select("name", "provisioned_auth").Find(&rows).Error
	if err != nil {
		return nil, translate(err, "read validators' provisioned clients", "")
	}
	out := make(map[string][]string, len(rows))
	for _, r := range rows {
		a := authOf(r.ProvisionedAuth)
		if a == nil {
			continue
		}
		for _, id := range []string{a.LedgerAPIClient, a.WalletClient, a.NameServiceClient} {
			if id != "" {
				out[r.Name] = append(out[r.Name], id)
			}
		}
	}
	return out, nil
}

// ListPage returns one page ordered by name, the number of validators that
// match the filter, and the generation the page was cut from, so that a page
// and its ETag always agree. The pages' ListView bytes are shared: read-only.
func (s *Store) ListPage(ctx context.Context, f domain.ValidatorFilter) ([]domain.ListedValidator, int64, int64, error) {
	if err := checkPage(f.Page); err != nil {
		return nil, 0, 0, err
	}
	ix, err := s.index(s.bounded(ctx))
	if err != nil {
		return nil, 0, 0, translate(err, "list validators", "")
	}
	out, total := ix.page(f)
	return out, total, ix.gen, nil
}

// ImportValidators inserts validators in one transaction: the bulk path
// for seeding (benchmarks) and imports. Rows are stored as given,
// timestamps included.
func (s *Store) ImportValidators(ctx context.Context, vs []domain.Validator) error {
	rows := make([]validatorRow, len(vs))
	for i := range vs {
		rows[i] = validatorFrom(&vs[i])
		rows[i].CreatedAt, rows[i].UpdatedAt = stamp(rows[i].CreatedAt), stamp(rows[i].UpdatedAt)
	}
	return translate(s.db.WithContext(ctx).CreateInBatches(rows, 500).Error, "import validators", "")
}

// StaleListViews reads up to limit validators after after, in name order,
// whose list view is not of version (with Spec, to render it from).
func (s *Store) StaleListViews(ctx context.Context, version int, after string, limit int) ([]domain.Validator, error) {
	var rows []validatorRow
	err := s.db.WithContext(ctx).Where("name > ? AND (list_view_version <> ? OR list_view IS NULL)", after, version).
		Order("name").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, translate(err, "read stale list views", "")
	}
	return domains(rows), nil
}

// SetListViews stores list views in one transaction, each unless its row
// was written since it was rendered (an edit wrote its own view).
func (s *Store) SetListViews(ctx context.Context, updates []domain.ListViewUpdate) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, u := range updates {
			err := tx.Model(&validatorRow{}).Where("name = ? AND updated_at = ?", u.Name, stamp(u.UpdatedAt)).
				Updates(map[string]any{"list_view": string(u.View), "list_view_version": u.Version}).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
	return translate(err, "store list views", "")
}

// SyncValidatorState records the cluster's phase and disableUserEdit flag.
// Unknown names are ignored, and an unchanged state leaves updated_at alone,
// so that periodic syncs do not rewrite every row.
func (s *Store) SyncValidatorState(ctx context.Context, name string, st domain.ValidatorState) error {
	err := s.db.WithContext(ctx).Model(&validatorRow{}).
		Where("name = ? AND (phase <> ? OR immutable <> ?)", name, string(st.Phase), st.DisableUserEdit).
		Updates(map[string]any{"phase": string(st.Phase), "immutable": st.DisableUserEdit, "updated_at": now()}).Error
	return translate(err, validatorWhat(name), "")
}
