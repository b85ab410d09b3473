package domain

import (
	"time"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// Phase is the lifecycle phase of a validator or remote participant.
type Phase = v1alpha1.Phase

const (
	PhasePending   = v1alpha1.PhasePending
	PhaseRunning   = v1alpha1.PhaseRunning
	PhaseCompleted = v1alpha1.PhaseCompleted
)

// Validator is one provisioned validator as validator-manager keeps it: the
// database row and, in the cluster, the Validator custom resource.
type Validator struct {
	Name  string
	Phase Phase
	// Immutable is set when the validator is flagged disableUserEdit (the
	// Validator resource carries the annotation DisableUserEditAnnotation).
	Immutable        bool
	CustomAuth       bool
	ExternalDatabase bool
	// DatabaseStorage is the internal database's volume size, a Kubernetes
	// quantity such as "10Gi"; empty means the default.
	DatabaseStorage string
	MigrationID     int32
	Migrating       bool
	// Spec is the validator's configuration in its stored form
	// (EncodeValidatorConfig; read it with Config).
	Spec []byte
	// ListView is the validator as release 1.11 lists it but for the columns
	// that change without its configuration and the addresses (which depend
	// on the server's namespace), rendered whenever Spec is written, so that a
	// page need not decode configurations. A view of another ListViewVersion
	// than the API layer's (0: none) is not used.
	ListView        []byte
	ListViewVersion int
	// WalletUserID is the identity provider's id of the wallet user created
	// for the validator; empty with custom authentication.
	WalletUserID string
	// ProvisionedAuth is what the identity provider made for the validator
	// (nil: nothing yet, or custom authentication).
	ProvisionedAuth *ProvisionedAuth
	// Claim is a random token of the create, which the identity provider's
	// objects made for the validator carry, so that the leader adopts those
	// (a retry after a crash) and never a user or client someone else made.
	Claim string
	// PendingSecrets are the secret values a create or an edit gave that the
	// leader has not written into the validator's Secrets yet, sealed
	// (keyring.Seal); empty when none wait. Never returned or logged.
	PendingSecrets string
	// ProvisionError says why the leader could not provision the validator
	// in the identity provider (a foreign user of its name, the provider
	// down); empty once it could.
	ProvisionError string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// IdentityClaim is the claim the identity provider's objects of v carry and
// its derived passwords use: a row written before creates had claims gets
// one derived from its name.
func (v Validator) IdentityClaim() string {
	if v.Claim != "" {
		return v.Claim
	}
	return "validator:" + v.Name
}

// ListedValidator is a validator as a list page reads it: the columns that
// change without its configuration, and its list view.
type ListedValidator struct {
	Name            string
	Phase           Phase
	Immutable       bool
	ListView        []byte
	ListViewVersion int
}

// ListViewUpdate is a list view rendered from a validator's row as it was
// when last written, at UpdatedAt.
type ListViewUpdate struct {
	Name      string
	UpdatedAt time.Time
	View      []byte
	Version   int
}

// ValidatorIntent is what the operator asked for one validator: the record
// the reconciler drives the identity provider and the cluster to.
type ValidatorIntent struct {
	Validator Validator
	// Prune is nil when there is no pruning schedule.
	Prune *PruneSchedule
	// Backup is nil when there is no backup schedule; a Deleted one is kept
	// suspended.
	Backup *BackupSchedule
}

// DisableUserEditAnnotation on a Validator resource freezes it: edits through
// the API are refused with 409.
const DisableUserEditAnnotation = "validator-manager.io/disable-user-edit"

// ValidatorSecrets are a validator's secret values, never returned or
// logged; an empty value is "not given" (on edit: keep the current Secret).
type ValidatorSecrets struct {
	OnboardingSecret      string
	LedgerAPIClientSecret string
	DatabasePassword      string
}

// Secret names of a validator, by convention.
func OnboardingSecretName(validator string) string { return validator + "-onboarding" }
func LedgerAPIAuthSecretName(validator string) string {
	return validator + "-ledger-api-auth"
}
func DatabaseSecretName(validator string) string { return validator + "-database" }

// ChartDatabaseUser is the internal database's user when Splice's charts
// run a validator (chart mode): their init steps connect as it whatever
// their values say (Splice 0.7.3).
const ChartDatabaseUser = "cnadmin"

// References are the cluster objects a validator's configuration names; they
// must exist before the validator is created. Field is the request field
// that named the object (a dotted JSON path), for the 400 that reports it.
type References struct {
	// Secrets that must exist (image pull secrets, identities secret, bucket secret).
	Secrets []Reference
	// SecretKeys are env vars' valueFrom.secretKeyRef; Optional ones may be absent.
	SecretKeys []SecretKeyReference
	// StorageClasses are cluster-scoped.
	StorageClasses []Reference
}

// Reference names one object.
type Reference struct {
	Field string
	Name  string
}

// SecretKeyReference names one key of one Secret.
type SecretKeyReference struct {
	Field    string
	Name     string
	Key      string
	Optional bool
}

// ValidatorState is what the cluster reports about a validator's resource.
type ValidatorState struct {
	Phase           Phase
	DatabaseRunning bool
	DisableUserEdit bool
}

// PruneSchedule is a validator's ledger pruning schedule (Canton automatic
// pruning): Cron in Canton's Quartz syntax, evaluated in UTC.
type PruneSchedule struct {
	Validator   string
	Cron        string
	MaxDuration time.Duration
	Retention   time.Duration
	// Raw texts as the caller wrote them ("5m", "48h"), returned unchanged.
	MaxDurationText string
	RetentionText   string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// BackupSchedule is a validator's database backup schedule: Cron in
// Kubernetes CronJob syntax, evaluated in UTC. A soft-deleted schedule keeps
// its record but runs no backups.
type BackupSchedule struct {
	Validator  string
	Cron       string
	MaxBackups int32
	Deleted    bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// RemoteParticipant is a participant node registered for reference; it runs
// outside the cluster and is not provisioned.
type RemoteParticipant struct {
	Name string
	// Spec is the registration as JSON (release 1.11 RemoteParticipantDto).
	Spec          []byte
	Phase         Phase
	AdminAddress  string
	AdminPort     string
	LedgerAddress string
	LedgerPort    string
	// Healthy is the last known health check; nil before the first one.
	Healthy       *bool
	LastCheckedAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// RunKind tells backup runs from pruning runs.
type RunKind string

const (
	RunBackup RunKind = "backup"
	RunPrune  RunKind = "prune"
)

// Run is one recorded backup or pruning run. It is running while
// FinishedAt is nil; Succeeded is set when it finished.
type Run struct {
	ID         int64
	Validator  string
	Kind       RunKind
	StartedAt  time.Time
	FinishedAt *time.Time
	Succeeded  *bool
	Message    string
	// JobUID is the UID of the Kubernetes Job the run was observed from
	// (empty for a run recorded otherwise): observing it again updates
	// the same run.
	JobUID string
}

// CreatedUser is an identity-provider user created for a validator. The
// temporary password is shown once, in the create response, and kept nowhere.
type CreatedUser struct {
	ID                string
	Username          string
	TemporaryPassword string
}

// ProvisionedAuth is what the identity provider made for a validator without
// custom authentication: its clients, their audience and the ledger API
// client's service-account user. Ids only: the client secret stays in the
// identity provider and the validator's Secret.
type ProvisionedAuth struct {
	Audience string `json:"audience"`
	// LedgerAPIClient is the validator app's confidential client
	// (client-credentials grant); LedgerAPIUser the id of its
	// service-account user, the subject of its tokens.
	LedgerAPIClient   string `json:"ledgerApiClientId"`
	LedgerAPIUser     string `json:"ledgerApiUser"`
	WalletClient      string `json:"walletClientId"`
	NameServiceClient string `json:"cnsClientId"`
	// WalletURL and NameServiceURL are the UIs' addresses the public
	// clients were given as redirect URIs and web origins: where the
	// server's setting now says otherwise, the clients are updated.
	WalletURL      string `json:"walletUiUrl,omitempty"`
	NameServiceURL string `json:"cnsUiUrl,omitempty"`
}

// Complete tells whether every id is set.
func (p ProvisionedAuth) Complete() bool {
	return p.Audience != "" && p.LedgerAPIClient != "" && p.LedgerAPIUser != "" && p.WalletClient != "" && p.NameServiceClient != ""
}

// AuthEndpoints are the URLs of the identity provider's realm that the
// validator's apps use; they follow its configuration (not stored per
// validator: a moved identity provider moves every validator with it).
type AuthEndpoints struct {
	// Authority is the issuer (Keycloak: <base>/realms/<realm>).
	Authority string
	JWKS      string
	// Config is the OpenID Connect discovery document.
	Config string
	Token  string
}

// SecretDefaults are values for a validator's Secrets that are written only
// where the Secret is missing or lacks its key, never over a value; nil:
// nothing to write. An empty value is written as empty.
type SecretDefaults struct {
	LedgerAPIClientSecret *string
	DatabasePassword      *string
}
