package management

import (
	"context"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Store is the database of release 1.11 (impl/store implements it). Missing
// rows are domain.ErrNotFound, duplicate names domain.ErrConflict.
type Store interface {
	CreateValidator(ctx context.Context, v *domain.Validator) error
	GetValidator(ctx context.Context, name string) (domain.Validator, error)
	UpdateValidator(ctx context.Context, v *domain.Validator) error
	DeleteValidator(ctx context.Context, name string) error
	ListValidators(ctx context.Context, f domain.ValidatorFilter) ([]domain.ListedValidator, int64, error)
	// SyncValidatorState records what the cluster reports (phase, disableUserEdit).
	SyncValidatorState(ctx context.Context, name string, s domain.ValidatorState) error
	// ValidatorStates reads the recorded state of every validator shown.
	ValidatorStates(ctx context.Context) (map[string]domain.ValidatorState, error)
	// StaleListViews reads up to limit validators after after, in name
	// order, whose list view is not of version, with their Spec.
	StaleListViews(ctx context.Context, version int, after string, limit int) ([]domain.Validator, error)
	// SetListViews stores list views in one transaction, each unless its
	// row was written since it was rendered.
	SetListViews(ctx context.Context, updates []domain.ListViewUpdate) error
	// FinishCreate clears the row's Creating flag.
	FinishCreate(ctx context.Context, name string) error
	// ValidatorIntent reads a validator (creating or not) with its schedules.
	ValidatorIntent(ctx context.Context, name string) (domain.ValidatorIntent, error)
	// ValidatorNames reads up to limit names of validators (creating or
	// not) after after, in name order.
	ValidatorNames(ctx context.Context, after string, limit int) ([]string, error)

	GetPruneSchedule(ctx context.Context, validator string) (domain.PruneSchedule, error)
	CreatePruneSchedule(ctx context.Context, p *domain.PruneSchedule) error
	UpdatePruneSchedule(ctx context.Context, p *domain.PruneSchedule) error
	DeletePruneSchedule(ctx context.Context, validator string) error

	// GetBackupSchedule returns soft-deleted schedules too (Deleted set).
	GetBackupSchedule(ctx context.Context, validator string) (domain.BackupSchedule, error)
	// SaveBackupSchedule creates, replaces or reactivates (clears Deleted).
	SaveBackupSchedule(ctx context.Context, b *domain.BackupSchedule) error
	SoftDeleteBackupSchedule(ctx context.Context, validator string) error
	// DeleteBackupSchedule removes the record for good (undoing a create).
	DeleteBackupSchedule(ctx context.Context, validator string) error

	CreateRemoteParticipant(ctx context.Context, p *domain.RemoteParticipant) error
	GetRemoteParticipant(ctx context.Context, name string) (domain.RemoteParticipant, error)
	UpdateRemoteParticipant(ctx context.Context, p *domain.RemoteParticipant) error
	DeleteRemoteParticipant(ctx context.Context, name string) error
	ListRemoteParticipants(ctx context.Context, f domain.RemoteParticipantFilter) ([]domain.RemoteParticipant, int64, error)
	RecordParticipantHealth(ctx context.Context, name string, healthy bool, at time.Time) error
}

// Cluster is the gateway to the cluster that runs the validators
// (impl/cluster: client-go, over a real cluster or the embedded default's
// persisted fake clientsets). Every write is idempotent: applying what is
// already there writes nothing.
type Cluster interface {
	// CheckReferences fails with domain.Invalid naming the field of the
	// first object that does not exist.
	CheckReferences(ctx context.Context, refs domain.References) error
	// ApplyValidator makes the Validator resource what v and prune (nil: no
	// pruning schedule) say.
	ApplyValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) error
	// WriteSecrets writes the secret values given into the validator's
	// Secrets (empty ones are left as they are); the resource must exist.
	WriteSecrets(ctx context.Context, validator string, secrets domain.ValidatorSecrets) error
	// ApplyBackupSchedule makes the backup CronJob what b says: nil removes
	// it, a Deleted schedule suspends it.
	ApplyBackupSchedule(ctx context.Context, validator string, b *domain.BackupSchedule) error
	// InStep tells from caches alone whether the cluster already runs what
	// in records; false when unsure (the reconciler then applies).
	InStep(in domain.ValidatorIntent) bool
	// DeleteValidator removes the resource, its Secrets and its backup
	// CronJob; absent objects are not an error.
	DeleteValidator(ctx context.Context, name string) error
	// ValidatorState reads the resource's status; domain.ErrNotFound when absent.
	ValidatorState(ctx context.Context, name string) (domain.ValidatorState, error)
	// ValidatorStates reads every managed validator's status (from a cache).
	ValidatorStates(ctx context.Context) (map[string]domain.ValidatorState, error)
	Ping(ctx context.Context) error
}

// Identity is the identity provider in which wallet users are created
// (impl/idp: Keycloak, or the local provider of the embedded default).
type Identity interface {
	// CreateWalletUser creates <validator>_walletuser with a random temporary
	// password that must be changed at first login; the user carries claim.
	CreateWalletUser(ctx context.Context, validator, claim string) (domain.CreatedUser, error)
	// DeleteWalletUser removes <validator>_walletuser if it carries claim;
	// an absent user, or one of another claim, is not an error.
	DeleteWalletUser(ctx context.Context, validator, claim string) error
}
