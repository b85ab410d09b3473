package management

import (
	"context"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Store is the database of release 1.11 (impl/store implements it). Missing
// rows are domain.ErrNotFound, duplicate names domain.ErrConflict.
type Store interface {
	// RecordCreate inserts a validator and, when not nil, its pruning
	// schedule in one transaction.
	RecordCreate(ctx context.Context, v *domain.Validator, prune *domain.PruneSchedule) error
	GetValidator(ctx context.Context, name string) (domain.Validator, error)
	UpdateValidator(ctx context.Context, v *domain.Validator) error
	// ListPage is one page of the list with the version it is of, which
	// moves whenever a page would change (the list's ETag).
	ListPage(ctx context.Context, f domain.ValidatorFilter) (rows []domain.ListedValidator, total, version int64, err error)
	// StaleListViews reads up to limit validators after after, in name
	// order, whose list view is not of version, with their Spec.
	StaleListViews(ctx context.Context, version int, after string, limit int) ([]domain.Validator, error)
	// SetListViews stores list views in one transaction, each unless its
	// row was written since it was rendered.
	SetListViews(ctx context.Context, updates []domain.ListViewUpdate) error

	GetPruneSchedule(ctx context.Context, validator string) (domain.PruneSchedule, error)
	CreatePruneSchedule(ctx context.Context, p *domain.PruneSchedule) error
	UpdatePruneSchedule(ctx context.Context, p *domain.PruneSchedule) error
	DeletePruneSchedule(ctx context.Context, validator string) error

	// GetBackupSchedule returns soft-deleted schedules too (Deleted set).
	GetBackupSchedule(ctx context.Context, validator string) (domain.BackupSchedule, error)
	// SaveBackupSchedule creates, replaces or reactivates (clears Deleted).
	SaveBackupSchedule(ctx context.Context, b *domain.BackupSchedule) error
	// CreateBackupSchedule creates or reactivates; domain.ErrConflict when
	// the schedule is active.
	CreateBackupSchedule(ctx context.Context, b *domain.BackupSchedule) error
	SoftDeleteBackupSchedule(ctx context.Context, validator string) error

	// ListRuns returns one page of a validator's runs, newest first, and
	// the number that match.
	ListRuns(ctx context.Context, f domain.RunFilter) ([]domain.Run, int64, error)

	// FindAudit returns one page of the audit log, newest first.
	FindAudit(ctx context.Context, f domain.AuditFilter) ([]domain.AuditEntry, error)
	CountAudit(ctx context.Context, f domain.AuditFilter) (int64, error)

	CreateRemoteParticipant(ctx context.Context, p *domain.RemoteParticipant) error
	GetRemoteParticipant(ctx context.Context, name string) (domain.RemoteParticipant, error)
	UpdateRemoteParticipant(ctx context.Context, p *domain.RemoteParticipant) error
	DeleteRemoteParticipant(ctx context.Context, name string) error
	ListRemoteParticipants(ctx context.Context, f domain.RemoteParticipantFilter) ([]domain.RemoteParticipant, int64, error)
	RecordParticipantHealth(ctx context.Context, name string, healthy bool, at time.Time) error
	ForgetParticipantHealth(ctx context.Context, name string) error
}

// Cluster is the cluster that runs the validators, as the handlers use it.
type Cluster interface {
	// CheckReferences fails with domain.Invalid naming the field of the
	// first object that does not exist.
	CheckReferences(ctx context.Context, refs domain.References) error
	// ReadPasswordKey reads the cluster's password key, which the leader
	// makes and never replaces; domain.ErrUnavailable while it is not made.
	ReadPasswordKey(ctx context.Context) ([]byte, error)
	// ValidatorState reads the resource's status; domain.ErrNotFound when absent.
	ValidatorState(ctx context.Context, name string) (domain.ValidatorState, error)
}

// Charts checks, in chart mode, the values a validator's record derives for
// Splice's charts at its imageTag against the charts' values.schema.json.
type Charts interface {
	// CheckValidator fails with domain.Invalid, keyed by the chart value
	// (<chart>.<value path>), when the charts of v's version are cached and
	// refuse the values. prune nil: the validator's current pruning schedule.
	CheckValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) error
}

// Intent is the controller that brings the identity provider and the
// cluster to what a record says. It runs on the leader only, which a
// handler's write reaches through the database's change feed.
type Intent interface {
	// Enqueue asks for a reconcile at once when the controller runs here.
	Enqueue(name string)
}
