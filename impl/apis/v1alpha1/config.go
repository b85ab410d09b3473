package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// ValidatorConfigVersion is the version of the stored format of
// ValidatorConfig that this server writes. Raise it when the JSON form
// changes in a way an older server would misread, and teach
// DecodeValidatorConfig to read the previous one. Version 2 holds
// Kubernetes' own types (corev1.EnvVar, ResourceRequirements, Volume,
// VolumeMount) where versions 0 and 1 had copies of release 1.11's (see
// legacy.go), and no phase (the status holds it).
const ValidatorConfigVersion = 2

// ErrConfigVersion is the failure to decode a configuration written in a
// version this server does not know (by a newer server).
var ErrConfigVersion = errors.New("unknown version of the stored validator configuration")

// ValidatorConfig is a validator's configuration as validator-manager keeps
// it: the database column validators.spec and the Validator resource's
// spec.config hold its JSON form (EncodeValidatorConfig). That form is the
// stored format: it belongs to this type and changes only with Version, not
// with the API contract. Its field names are those of the release 1.11
// payload it was first written from; the values of environment variables,
// compute resources and volumes are Kubernetes' types. It holds no secret
// value.
type ValidatorConfig struct {
	// Version of the stored format; EncodeValidatorConfig always writes
	// ValidatorConfigVersion. 0 is a row written before the marker.
	Version    int     `json:"version"`
	Name       string  `json:"name"`
	ImageRepo  string  `json:"imageRepo"`
	ImageTag   string  `json:"imageTag"`
	CustomAuth *bool   `json:"customAuth,omitempty"`
	Auth       *Auth   `json:"auth,omitempty"`
	Cluster    Cluster `json:"clusterConfig"`
	// ParticipantNode configures the participant node itself; Participant
	// its workload.
	ParticipantNode ParticipantNode `json:"clusterParticipantConfig"`
	Participant     App             `json:"participant"`
	// EnvVars of the validator application.
	EnvVars  *[]corev1.EnvVar `json:"envVars,omitempty"`
	Database *Database        `json:"databaseConfig,omitempty"`
	// DatabaseWorkload configures the internal database's pod.
	DatabaseWorkload *DatabaseWorkload `json:"sqlDbConfig,omitempty"`
	// LegacyDatabaseUser is the deprecated spelling of Database.Username.
	LegacyDatabaseUser *string `json:"sqlDbUser,omitempty"`

	// Set only by edits.
	WalletSweeps     []WalletSweep `json:"walletSweeps,omitempty"`
	CleanRestoreData bool          `json:"cleanRestoreData,omitempty"`

	// WrittenSecrets records which of the validator's Secrets were written,
	// so that responses can name them.
	WrittenSecrets WrittenSecrets `json:"writtenSecrets"`
}

// StorageClass is the storage class of the validator's volumes; empty means
// the cluster's default.
func (c ValidatorConfig) StorageClass() string { return ptr.Deref(c.Cluster.StorageClass, "") }

// DatabaseUser is the user of the validator's database; empty means the
// default. The deprecated LegacyDatabaseUser counts when Database has none.
func (c ValidatorConfig) DatabaseUser() string {
	if c.Database != nil && ptr.Deref(c.Database.Username, "") != "" {
		return *c.Database.Username
	}
	return ptr.Deref(c.LegacyDatabaseUser, "")
}

// MarkWritten records the Secrets that written names as written (a Secret
// once written stays).
func (c *ValidatorConfig) MarkWritten(written WrittenSecrets) {
	w := &c.WrittenSecrets
	w.Onboarding = w.Onboarding || written.Onboarding
	w.LedgerAPIAuth = w.LedgerAPIAuth || written.LedgerAPIAuth
	w.Database = w.Database || written.Database
}

// WrittenSecrets tells which of the validator's Secrets were written.
type WrittenSecrets struct {
	Onboarding    bool `json:"onboarding,omitempty"`
	LedgerAPIAuth bool `json:"ledgerApiAuth,omitempty"`
	Database      bool `json:"database,omitempty"`
}

// Auth is the identity-provider setup of a validator with custom
// authentication. The client secret is a Secret, not kept here.
type Auth struct {
	Audience          string  `json:"audience"`
	NameServiceClient string  `json:"cnsClientId"`
	JWKSURL           *string `json:"jwksUrl,omitempty"`
	LedgerAPIClient   string  `json:"ledgerApiClientId"`
	LedgerAPIUser     string  `json:"ledgerApiUser"`
	OIDCAuthorityURL  *string `json:"oidcAuthorityUrl,omitempty"`
	OIDCConfigURL     *string `json:"oidcConfigUrl,omitempty"`
	WalletClient      string  `json:"walletClientId"`
	WalletUser        string  `json:"walletUser"`
}

// Cluster is the validator's deployment (the splice-validator Helm values).
type Cluster struct {
	AdditionalConfig       *string          `json:"additionalConfigOther,omitempty"`
	AdditionalUsersEnvVars *[]corev1.EnvVar `json:"additionalUsersEnvVars,omitempty"`
	AppDars                *string          `json:"appDars,omitempty"`
	NameService            App              `json:"appInfoLedgerNameService"`
	ValidatorApp           App              `json:"appInfoValidator"`
	Wallet                 *App             `json:"appInfoWallet,omitempty"`
	ContactPoint           *string          `json:"contactPoint,omitempty"`
	// SynchronizerURL is used when SequencersFromScan is false.
	SynchronizerURL          *string               `json:"decentralizedSynchronizerUrl,omitempty"`
	DefaultJVMOptions        string                `json:"defaultJvmOptions"`
	DevNet                   *bool                 `json:"devNet,omitempty"`
	DisableProbes            *bool                 `json:"disableProbes,omitempty"`
	DisabledWallet           *bool                 `json:"disabledWallet,omitempty"`
	ExtraSynchronizers       *[]Synchronizer       `json:"extraDomains,omitempty"`
	FailOnAppVersionMismatch *bool                 `json:"failOnAppVersionMismatch,omitempty"`
	FixedTokens              *bool                 `json:"fixedTokens,omitempty"`
	Metrics                  *Metrics              `json:"metrics,omitempty"`
	MigrateValidatorParty    *bool                 `json:"migrateValidatorParty,omitempty"`
	Migration                Migration             `json:"migration"`
	IdentitiesBackup         *IdentitiesBackup     `json:"participantIdentitiesDumpBackup,omitempty"`
	IdentitiesImport         *IdentitiesImport     `json:"participantIdentitiesDumpImport,omitempty"`
	PartyHint                string                `json:"partyHint"`
	StorageClass             *string               `json:"pvcVolumeStorageClass,omitempty"`
	ScanAddress              string                `json:"scanAddress"`
	Prune                    *PruneScheduleRequest `json:"scheduledPrune,omitempty"`
	SVSponsorAddress         string                `json:"svSponsorAddress"`
	SVValidator              *bool                 `json:"svValidator,omitempty"`
	TopUp                    *TopUp                `json:"topUp,omitempty"`
	SequencersFromScan       *bool                 `json:"useSequencerConnectionsFromScan,omitempty"`
	WalletUserName           *string               `json:"walletUserName,omitempty"`
}

// App is the environment and compute resources of one application.
type App struct {
	// EnvVars is written as null when there are none (the stored form
	// keeps it so). A later variable of a name replaces an earlier one.
	// +nullable
	EnvVars  []corev1.EnvVar `json:"envVars"`
	Workload `json:",inline"`
}

// Workload is what release 1.11's resources object sets on a workload:
// requests and limits over the charts' defaults, replicas and image pull
// secrets.
type Workload struct {
	Resources        *corev1.ResourceRequirements  `json:"resources,omitempty"`
	Replicas         *int32                        `json:"replicas,omitempty"`
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// Synchronizer is an additional synchronizer to connect to.
type Synchronizer struct {
	Alias *string `json:"alias,omitempty"`
	URL   *string `json:"url,omitempty"`
}

// Metrics are the metrics export settings.
type Metrics struct {
	Enable   *bool   `json:"enable,omitempty"`
	Interval *string `json:"interval,omitempty"`
	Release  *string `json:"release,omitempty"`
}

// Migration is the synchronizer migration.
type Migration struct {
	ID        int32 `json:"id"`
	Migrating *bool `json:"migrating,omitempty"`
}

// IdentitiesBackup is the periodic backup of the participant identities.
type IdentitiesBackup struct {
	Interval         string `json:"backupInterval"`
	BucketName       string `json:"locationBucketName"`
	BucketProjectID  string `json:"locationBucketProjectId"`
	BucketSecretName string `json:"locationBucketSecretName"`
	Prefix           string `json:"locationPrefix"`
}

// IdentitiesImport imports participant identities from a backup.
type IdentitiesImport struct {
	SecretName               string `json:"identitiesSecretName"`
	NewParticipantIdentifier string `json:"newParticipantIdentifier"`
}

// PruneScheduleRequest is the pruning schedule given with the create
// payload, as written (the schedule itself is a PruneSchedule). Its deepcopy
// is written by hand (deepcopy.go): controller-gen cannot copy a time.Time.
//
// +kubebuilder:object:generate=false
type PruneScheduleRequest struct {
	Cron        string `json:"cron"`
	MaxDuration string `json:"maxDuration"`
	// NextRun is an RFC 3339 time (time.Time keeps the stored form's
	// sub-second precision, which metav1.Time would drop).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	NextRun   *time.Time `json:"nextRun,omitempty"`
	Retention string     `json:"retention"`
}

// TopUp is the automatic purchase of synchronizer traffic.
type TopUp struct {
	Enable           *bool   `json:"enable,omitempty"`
	MinTopupInterval *string `json:"minTopupInterval,omitempty"`
	TargetThroughput *int32  `json:"targetThroughput,omitempty"`
}

// ParticipantNode is the participant node's own configuration.
type ParticipantNode struct {
	// Deprecated spellings kept as given: DefaultJVMOptions of Cluster,
	// DisableProbes of Cluster.
	DefaultJVMOptions  *string `json:"defaultJvmOptions,omitempty"`
	EnableHealthProbes *bool   `json:"enableHealthProbes,omitempty"`
	EnableKMS          *bool   `json:"enableKms,omitempty"`
	ExposeLedgerAPI    *bool   `json:"exposeLedgerApi,omitempty"`
	KMSServiceAccount  *string `json:"kmsServiceAccount,omitempty"`
	KMSValue           *string `json:"kmsValue,omitempty"`
	NodeIdentifier     *string `json:"nodeIdentifier,omitempty"`
	PrivateJSONAPI     *bool   `json:"privateJsonApi,omitempty"`
}

// Database is where the validator's database is. The password is a Secret,
// not kept here.
type Database struct {
	External *bool   `json:"external,omitempty"`
	Hostname *string `json:"hostname,omitempty"`
	Port     *string `json:"port,omitempty"`
	Username *string `json:"username,omitempty"`
}

// DatabaseWorkload is the internal database's pod.
type DatabaseWorkload struct {
	Args         *[]string `json:"args,omitempty"`
	Image        *string   `json:"image,omitempty"`
	Workload     `json:",inline"`
	VolumeMounts *[]corev1.VolumeMount `json:"volumeMounts,omitempty"`
	Volumes      *[]corev1.Volume      `json:"volumes,omitempty"`
}

// WalletSweep moves wallet balance above a threshold to another party.
type WalletSweep struct {
	MaxBalanceUSD   string `json:"maxBalanceUSD"`
	MinBalanceUSD   string `json:"minBalanceUSD"`
	ReceiverPartyID string `json:"receiverPartyId"`
	SenderPartyID   string `json:"senderPartyId"`
	// UseTransferPreapproval transfers via the receiver's preapproval.
	UseTransferPreapproval bool `json:"useTransferPreapproval"`
}

// EncodeValidatorConfig is the stored form of c, marked with the current
// ValidatorConfigVersion.
func EncodeValidatorConfig(c ValidatorConfig) ([]byte, error) {
	c.Version = ValidatorConfigVersion
	return json.Marshal(c)
}

// DecodeValidatorConfig reads a stored configuration of any version up to
// ValidatorConfigVersion; versions 0 (no marker) and 1 are converted to the
// current types (legacy.go) and keep their Version. A newer version is
// refused with ErrConfigVersion, and a field this server does not know with
// an error: re-encoding would drop it silently.
func DecodeValidatorConfig(b []byte) (ValidatorConfig, error) {
	return decodeConfig(b, true)
}

// UnmarshalJSON reads any known version, as DecodeValidatorConfig does but
// ignoring unknown fields: a Validator resource read from the API server
// may hold a version 0 or 1 spec.config (kept whole: the CRD gives
// spec.config no schema) until the gateway rewrites it.
func (c *ValidatorConfig) UnmarshalJSON(b []byte) error {
	d, err := decodeConfig(b, false)
	if err != nil {
		return err
	}
	*c = d
	return nil
}

// storedConfig is ValidatorConfig without its methods (UnmarshalJSON).
//
// +kubebuilder:object:generate=false
type storedConfig ValidatorConfig

func decodeConfig(b []byte, strict bool) (ValidatorConfig, error) {
	// One pass in the common case (a list decodes a configuration per
	// row); the version marker is read on its own only otherwise.
	var c storedConfig
	err := decodeJSON(b, &c, strict)
	if err == nil && c.Version == ValidatorConfigVersion {
		return ValidatorConfig(c), nil
	}
	var marker struct {
		Version json.RawMessage `json:"version"`
	}
	if merr := json.Unmarshal(b, &marker); merr != nil {
		return ValidatorConfig{}, fmt.Errorf("stored validator configuration: %w", merr)
	}
	version := 0
	if len(marker.Version) > 0 {
		if verr := json.Unmarshal(marker.Version, &version); verr != nil || version < 0 {
			return ValidatorConfig{}, fmt.Errorf("%w: %s", ErrConfigVersion, marker.Version)
		}
	}
	switch {
	case version > ValidatorConfigVersion:
		return ValidatorConfig{}, fmt.Errorf("%w: version %d was written by a newer server; this one reads up to version %d",
			ErrConfigVersion, version, ValidatorConfigVersion)
	case version < ValidatorConfigVersion:
		var l legacyConfig
		if err := decodeJSON(b, &l, strict); err != nil {
			return ValidatorConfig{}, fmt.Errorf("stored validator configuration (version %d): %w", version, err)
		}
		return l.convert(), nil
	}
	return ValidatorConfig{}, fmt.Errorf("stored validator configuration (version %d): %w", version, err)
}

func decodeJSON(b []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}
