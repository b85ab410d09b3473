package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is the lifecycle phase of a validator (and of a remote participant).
// +kubebuilder:validation:Enum=PENDING;RUNNING;COMPLETED
type Phase string

const (
	PhasePending   Phase = "PENDING"
	PhaseRunning   Phase = "RUNNING"
	PhaseCompleted Phase = "COMPLETED"
)

// Condition types of a Validator's status.
const (
	// ConditionParticipantReady: the participant Deployment is available.
	ConditionParticipantReady = "ParticipantReady"
	// ConditionValidatorAppReady: the validator app Deployment is available.
	ConditionValidatorAppReady = "ValidatorAppReady"
	// ConditionDatabaseReady: the internal database's StatefulSet is ready
	// (always true for an external database).
	ConditionDatabaseReady = "DatabaseReady"
	// ConditionReady: every workload of the validator is available at its
	// current generation.
	ConditionReady = "Ready"
	// ConditionProvisioned: written by the leader's intent controller (a
	// field owner of its own), not the workload controller. False while
	// provisioning fails (reasons WalletUserConflict, ClientConflict,
	// IdentityProviderUnavailable, SecretsUnsealable,
	// DatabasePasswordMissing); True (reason Provisioned) once a failure
	// it showed is over; absent on a validator that never failed.
	ConditionProvisioned = "Provisioned"
	// ConditionRendered: the workload controller rendered the validator's
	// desired objects (the built-in layout, or Splice's charts in chart
	// mode). False while rendering fails (reason ChartUnavailable and the
	// chart renderer's others, or NamespaceMoved): nothing of that render
	// is applied, the running objects stay and the phase is PENDING; True
	// (reason Rendered) once a render succeeds.
	ConditionRendered = "Rendered"
	// ConditionDatabasePasswordRotated: the workload controller's, once an
	// edit gave the internal database a new password: False while the
	// running database is being set to it (reason Rotating) or when that
	// failed (RotationFailed: the database and the apps keep the old
	// password); True (Rotated) once the apps start with the new one.
	ConditionDatabasePasswordRotated = "DatabasePasswordRotated"
)

// Validator is a validator managed by validator-manager. metadata.name is
// the validator's name; labels app.kubernetes.io/managed-by=validator-manager
// and validator-manager.io/validator=<name>. validator-manager never changes
// annotations: operators set validator-manager.io/disable-user-edit="true" to
// freeze the validator against edits through the API. The validator's Secrets
// (<name>-onboarding key secret, <name>-ledger-api-auth key client-secret,
// <name>-database key password), its workloads and its backup CronJob
// <name>-backup carry the same labels and an ownerReference to this
// resource; the backup PVC <name>-backups has no owner so that backups
// survive the validator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Validator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValidatorSpec   `json:"spec,omitempty"`
	Status ValidatorStatus `json:"status,omitempty"`
}

// ValidatorList is a list of Validators.
//
// +kubebuilder:object:root=true
type ValidatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Validator `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Validator{}, &ValidatorList{})
}

// ValidatorSpec is written by validator-manager on create and edit.
type ValidatorSpec struct {
	// Config is the validator's configuration in validator-manager's stored
	// format, the same JSON as its database row, with every secret value
	// removed. Its layout follows config.version, not the API contract; what
	// other components need from it is written beside it as typed fields
	// (storageClass, database). The API server keeps it as written: it has
	// no schema, because one schema cannot describe every stored version and
	// the API server prunes on read the fields its schema lacks.
	//
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Config ValidatorConfig `json:"config"`
	// StorageClass of the validator's volumes (and of its backup volume);
	// absent means the cluster's default.
	StorageClass string `json:"storageClass,omitempty"`
	// Database is the validator's database as the workloads and the backup
	// Job reach it.
	Database *DatabaseRef `json:"database,omitempty"`
	// CustomAuth: the validator uses its own authentication (no
	// identity-provider user is created).
	CustomAuth bool `json:"customAuth"`
	// ExternalDatabase: the validator uses an external PostgreSQL; no
	// internal database runs and no backups are taken.
	ExternalDatabase bool `json:"externalDatabase"`
	// DatabaseStorage is the volume size of the internal database (a
	// Kubernetes quantity such as 10Gi); absent means the default.
	DatabaseStorage string `json:"databaseStorage,omitempty"`
	// Migration is the synchronizer migration (Helm migration.id and
	// migration.migrating).
	Migration MigrationSpec `json:"migration"`
	// Secrets are the validator's Secrets in this namespace. An entry is
	// present only when its Secret exists. Values are never stored in this
	// resource.
	Secrets *ValidatorSecretRefs `json:"secrets,omitempty"`
	// ParticipantPruningSchedule is the automatic pruning of the participant
	// (Canton; Helm key participantPruningSchedule). cron is Canton's Quartz
	// syntax (7 fields, evaluated in UTC); maxDuration and retention are
	// durations such as 5m, 48h, 30d. Absent when no schedule is set.
	ParticipantPruningSchedule *PruningSchedule `json:"participantPruningSchedule,omitempty"`
	// ChartValues are Helm values for Splice's charts that the API does not
	// model, given per validator (edit with kubectl): an object with a key
	// per chart (splice-participant, splice-validator), each holding values
	// of that chart. Used only in chart mode (the server setting
	// splice.charts); they override the server's splice.chartValues and are
	// overridden by the values the server derives where deploy/README.md
	// says it must.
	//
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	ChartValues *apiextensionsv1.JSON `json:"chartValues,omitempty"`
}

// DatabaseRef names the validator's database user.
type DatabaseRef struct {
	// User of the database; absent means postgres.
	User string `json:"user,omitempty"`
}

// MigrationSpec is the synchronizer migration.
type MigrationSpec struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=0
	ID        int32 `json:"id"`
	Migrating bool  `json:"migrating"`
}

// ValidatorSecretRefs are the validator's Secrets.
type ValidatorSecretRefs struct {
	// Onboarding secret of the sponsoring super validator (Secret
	// <name>-onboarding, key secret).
	Onboarding *SecretKeyRef `json:"onboarding,omitempty"`
	// LedgerAPIAuth is the client secret of the validator's ledger API client
	// (Secret <name>-ledger-api-auth, key client-secret).
	LedgerAPIAuth *SecretKeyRef `json:"ledgerApiAuth,omitempty"`
	// Database is the password of the validator's database (Secret
	// <name>-database, key password).
	Database *SecretKeyRef `json:"database,omitempty"`
}

// SecretKeyRef names one key of a Secret in the validator's namespace.
type SecretKeyRef struct {
	// +kubebuilder:validation:Required
	Name string `json:"name"`
	// +kubebuilder:validation:Required
	Key string `json:"key"`
}

// PruningSchedule is Canton's automatic pruning schedule.
type PruningSchedule struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=300
	Cron string `json:"cron"`
	// +kubebuilder:validation:Required
	MaxDuration string `json:"maxDuration"`
	// +kubebuilder:validation:Required
	Retention string `json:"retention"`
}

// ValidatorStatus is written through the status subresource by the workload
// controller, from the validator's workloads, and by the intent controller,
// which applies only the Provisioned condition (server-side apply under a
// field owner of its own; conditions are a map keyed by type);
// validator-manager's API only reads it.
type ValidatorStatus struct {
	// Phase is the lifecycle phase; empty reads as PENDING. PENDING until the
	// participant and validator app Deployments are available, RUNNING from
	// then on, COMPLETED once every workload of the validator is available
	// at its current generation. PENDING, whatever the workloads report,
	// while a pod cannot start (CreateContainerConfigError,
	// InvalidImageName, Unschedulable) or a Secret or ConfigMap a pod
	// template reads, or a key it reads of a Secret, is missing
	// (SecretNotFound, ConfigMapNotFound, SecretKeyMissing): the Ready
	// condition names the cause.
	Phase Phase `json:"phase,omitempty"`
	// DatabaseReady: the internal database is ready (backups can be
	// scheduled). Always false for an external database.
	DatabaseReady bool `json:"databaseReady,omitempty"`
	// ObservedGeneration is the metadata.generation this status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: ParticipantReady, ValidatorAppReady, DatabaseReady, Ready,
	// Rendered, DatabasePasswordRotated (the workload controller's; the
	// last once an edit changed the internal database's password);
	// Provisioned (the intent controller's):
	// False while provisioning fails, with reason WalletUserConflict,
	// ClientConflict, IdentityProviderUnavailable, SecretsUnsealable or
	// DatabasePasswordMissing, True (reason Provisioned) once a failure it
	// showed is over, absent on a validator that never failed.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Namespace holds the validator's workloads: the Validator's own for the
	// built-in layout, a namespace of the validator's own in chart mode
	// (Splice's charts name their objects the same in every release).
	Namespace string `json:"namespace,omitempty"`
	// Charts are the charts the workloads were last rendered from, in chart
	// mode; absent for the built-in layout.
	// +listType=map
	// +listMapKey=name
	Charts []ChartRef `json:"charts,omitempty"`
}

// ChartRef names one chart a validator's workloads were rendered from.
type ChartRef struct {
	// Name of the chart (splice-participant, splice-validator); required:
	// it keys the list, and the API server refuses a list-map key that may
	// be absent.
	// +kubebuilder:validation:Required
	Name string `json:"name"`
	// Reference is the chart's OCI reference without its version
	// (oci://ghcr.io/.../helm/splice-validator).
	Reference string `json:"reference"`
	// Version of the chart (the validator's imageTag).
	Version string `json:"version"`
	// Digest of the chart's manifest in the registry (sha256:...).
	Digest string `json:"digest"`
}
