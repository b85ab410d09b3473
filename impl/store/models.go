package store

import (
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// take reads the one row of R that conds select, as its domain value; what
// names the row in the error when there is none.
func take[R interface{ domain() D }, D any](db *gorm.DB, what string, conds ...any) (D, error) {
	var row R
	if err := db.Take(&row, conds...).Error; err != nil {
		var zero D
		return zero, translate(err, what, "")
	}
	return row.domain(), nil
}

// optional is take of a row that may be absent (nil).
func optional[R interface{ domain() D }, D any](db *gorm.DB, what string, conds ...any) (*D, error) {
	d, err := take[R](db, what, conds...)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &d, nil
}

// domains is rows as their domain values.
func domains[R interface{ domain() D }, D any](rows []R) []D {
	out := make([]D, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out
}

// update writes the columns cols of row (selected by its primary key) and
// reads the stored row back into out.
func update[R interface{ domain() D }, D any](db *gorm.DB, row *R, out *D, what string, cols ...string) error {
	if err := affected(db.Model(row).Clauses(clause.Returning{}).Select(cols).Updates(row), what); err != nil {
		return err
	}
	*out = (*row).domain()
	return nil
}

// Rows map the tables of migrations/; the SQL files own the schema, these
// structs only name the columns GORM reads and writes.

type validatorRow struct {
	Name             string `gorm:"primaryKey"`
	Phase            string
	Immutable        bool
	CustomAuth       bool
	ExternalDatabase bool
	DatabaseStorage  string
	MigrationID      int32
	Migrating        bool
	Spec             string
	ListView         *string
	ListViewVersion  int
	WalletUserID     string
	ProvisionedAuth  string
	Claim            string
	PendingSecrets   string
	ProvisionError   string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

func (validatorRow) TableName() string { return "validators" }

func validatorFrom(v *domain.Validator) validatorRow {
	return validatorRow{
		Name:             v.Name,
		Phase:            string(v.Phase),
		Immutable:        v.Immutable,
		CustomAuth:       v.CustomAuth,
		ExternalDatabase: v.ExternalDatabase,
		DatabaseStorage:  v.DatabaseStorage,
		MigrationID:      v.MigrationID,
		Migrating:        v.Migrating,
		Spec:             string(v.Spec),
		ListView:         viewText(v.ListView),
		ListViewVersion:  v.ListViewVersion,
		WalletUserID:     v.WalletUserID,
		ProvisionedAuth:  authText(v.ProvisionedAuth),
		Claim:            v.Claim,
		PendingSecrets:   v.PendingSecrets,
		ProvisionError:   v.ProvisionError,
		CreatedAt:        v.CreatedAt,
		UpdatedAt:        v.UpdatedAt,
	}
}

func (r validatorRow) domain() domain.Validator {
	return domain.Validator{
		Name:             r.Name,
		Phase:            domain.Phase(r.Phase),
		Immutable:        r.Immutable,
		CustomAuth:       r.CustomAuth,
		ExternalDatabase: r.ExternalDatabase,
		DatabaseStorage:  r.DatabaseStorage,
		MigrationID:      r.MigrationID,
		Migrating:        r.Migrating,
		Spec:             specBytes(r.Spec),
		ListView:         viewBytes(r.ListView),
		ListViewVersion:  r.ListViewVersion,
		WalletUserID:     r.WalletUserID,
		ProvisionedAuth:  authOf(r.ProvisionedAuth),
		Claim:            r.Claim,
		PendingSecrets:   r.PendingSecrets,
		ProvisionError:   r.ProvisionError,
		CreatedAt:        r.CreatedAt.UTC(),
		UpdatedAt:        r.UpdatedAt.UTC(),
	}
}

// authText and authOf map provisioned auth to its column (” for none). A
// column that does not decode reads as none: the controller provisions
// again, adopting the identity provider's clients.
func authText(a *domain.ProvisionedAuth) string {
	if a == nil {
		return ""
	}
	raw, _ := json.Marshal(a)
	return string(raw)
}

func authOf(s string) *domain.ProvisionedAuth {
	var a domain.ProvisionedAuth
	if s == "" || json.Unmarshal([]byte(s), &a) != nil {
		return nil
	}
	return &a
}

// viewText and viewBytes map a list view to its nullable column.
func viewText(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func viewBytes(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

type pruneRow struct {
	Validator          string `gorm:"primaryKey"`
	Cron               string
	MaxDurationSeconds int64
	RetentionSeconds   int64
	MaxDurationText    string
	RetentionText      string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

func (pruneRow) TableName() string { return "prune_schedules" }

// Durations are kept in whole seconds: Canton's pruning durations are no finer.
func pruneFrom(p *domain.PruneSchedule) pruneRow {
	return pruneRow{
		Validator:          p.Validator,
		Cron:               p.Cron,
		MaxDurationSeconds: int64(p.MaxDuration / time.Second),
		RetentionSeconds:   int64(p.Retention / time.Second),
		MaxDurationText:    p.MaxDurationText,
		RetentionText:      p.RetentionText,
		CreatedAt:          p.CreatedAt,
		UpdatedAt:          p.UpdatedAt,
	}
}

func (r pruneRow) domain() domain.PruneSchedule {
	return domain.PruneSchedule{
		Validator:       r.Validator,
		Cron:            r.Cron,
		MaxDuration:     time.Duration(r.MaxDurationSeconds) * time.Second,
		Retention:       time.Duration(r.RetentionSeconds) * time.Second,
		MaxDurationText: r.MaxDurationText,
		RetentionText:   r.RetentionText,
		CreatedAt:       r.CreatedAt.UTC(),
		UpdatedAt:       r.UpdatedAt.UTC(),
	}
}

type backupRow struct {
	Validator  string `gorm:"primaryKey"`
	Cron       string
	MaxBackups int32
	CreatedAt  time.Time
	UpdatedAt  time.Time
	DeletedAt  gorm.DeletedAt
}

func (backupRow) TableName() string { return "backup_schedules" }

func (r backupRow) domain() domain.BackupSchedule {
	return domain.BackupSchedule{
		Validator:  r.Validator,
		Cron:       r.Cron,
		MaxBackups: r.MaxBackups,
		Deleted:    r.DeletedAt.Valid,
		CreatedAt:  r.CreatedAt.UTC(),
		UpdatedAt:  r.UpdatedAt.UTC(),
	}
}

type participantRow struct {
	Name          string `gorm:"primaryKey"`
	Spec          string
	Phase         string
	AdminAddress  string
	AdminPort     string
	LedgerAddress string
	LedgerPort    string
	Healthy       *bool
	LastCheckedAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

func (participantRow) TableName() string { return "remote_participants" }

func participantFrom(p *domain.RemoteParticipant) participantRow {
	return participantRow{
		Name:          p.Name,
		Spec:          string(p.Spec),
		Phase:         string(p.Phase),
		AdminAddress:  p.AdminAddress,
		AdminPort:     p.AdminPort,
		LedgerAddress: p.LedgerAddress,
		LedgerPort:    p.LedgerPort,
		Healthy:       p.Healthy,
		LastCheckedAt: p.LastCheckedAt,
		CreatedAt:     p.CreatedAt,
		UpdatedAt:     p.UpdatedAt,
	}
}

func (r participantRow) domain() domain.RemoteParticipant {
	return domain.RemoteParticipant{
		Name:          r.Name,
		Spec:          specBytes(r.Spec),
		Phase:         domain.Phase(r.Phase),
		AdminAddress:  r.AdminAddress,
		AdminPort:     r.AdminPort,
		LedgerAddress: r.LedgerAddress,
		LedgerPort:    r.LedgerPort,
		Healthy:       r.Healthy,
		LastCheckedAt: utc(r.LastCheckedAt),
		CreatedAt:     r.CreatedAt.UTC(),
		UpdatedAt:     r.UpdatedAt.UTC(),
	}
}

type runRow struct {
	ID         int64 `gorm:"primaryKey"`
	Validator  string
	Kind       string
	StartedAt  time.Time
	FinishedAt *time.Time
	Succeeded  *bool
	Message    string
	JobUID     *string `gorm:"column:job_uid"`
}

func (runRow) TableName() string { return "runs" }

func (r runRow) domain() domain.Run {
	run := domain.Run{
		ID:         r.ID,
		Validator:  r.Validator,
		Kind:       domain.RunKind(r.Kind),
		StartedAt:  r.StartedAt.UTC(),
		FinishedAt: utc(r.FinishedAt),
		Succeeded:  r.Succeeded,
		Message:    r.Message,
	}
	if r.JobUID != nil {
		run.JobUID = *r.JobUID
	}
	return run
}

// utc is an optional time in UTC.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	at := t.UTC()
	return &at
}

// specBytes returns a spec column as the domain's []byte; an empty column is nil.
func specBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}
