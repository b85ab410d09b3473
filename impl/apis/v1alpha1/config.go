package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ValidatorConfigVersion is the version of the stored format of
// ValidatorConfig that this server writes. Raise it when the JSON form
// changes in a way an older server would misread, and teach
// DecodeValidatorConfig to read the previous one.
const ValidatorConfigVersion = 1

// ErrConfigVersion is the failure to decode a configuration written in a
// version this server does not know (by a newer server).
var ErrConfigVersion = errors.New("unknown version of the stored validator configuration")

// ValidatorConfig is a validator's configuration as validator-manager keeps
// it: the database column validators.spec and the Validator resource's
// spec.config hold its JSON form (EncodeValidatorConfig). That form is the
// stored format: it belongs to this type and changes only with Version, not
// with the API contract. Its field names are those of the release 1.11
// payload it was first written from, so that rows written before the
// version marker (version 0) still decode. It holds no secret value.
type ValidatorConfig struct {
	// Version of the stored format; EncodeValidatorConfig always writes
	// ValidatorConfigVersion. 0 is a row written before the marker.
	Version    int     `json:"version"`
	Name       string  `json:"name"`
	ImageRepo  string  `json:"imageRepo"`
	ImageTag   string  `json:"imageTag"`
	CustomAuth *bool   `json:"customAuth,omitempty"`
	Phase      *Phase  `json:"phase,omitempty"`
	Auth       *Auth   `json:"auth,omitempty"`
	Cluster    Cluster `json:"clusterConfig"`
	// ParticipantNode configures the participant node itself; Participant
	// its workload.
	ParticipantNode ParticipantNode `json:"clusterParticipantConfig"`
	Participant     App             `json:"participant"`
	// EnvVars of the validator application.
	EnvVars  *[]EnvVar `json:"envVars,omitempty"`
	Database *Database `json:"databaseConfig,omitempty"`
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
func (c ValidatorConfig) StorageClass() string { return deref(c.Cluster.StorageClass) }

// DatabaseUser is the user of the validator's database; empty means the
// default. The deprecated LegacyDatabaseUser counts when Database has none.
func (c ValidatorConfig) DatabaseUser() string {
	if c.Database != nil && deref(c.Database.Username) != "" {
		return *c.Database.Username
	}
	return deref(c.LegacyDatabaseUser)
}

// MarkWritten records the Secrets that written names as written (a Secret
// once written stays).
func (c *ValidatorConfig) MarkWritten(written WrittenSecrets) {
	w := &c.WrittenSecrets
	w.Onboarding = w.Onboarding || written.Onboarding
	w.LedgerAPIAuth = w.LedgerAPIAuth || written.LedgerAPIAuth
	w.Database = w.Database || written.Database
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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
	AdditionalConfig       *string   `json:"additionalConfigOther,omitempty"`
	AdditionalUsersEnvVars *[]EnvVar `json:"additionalUsersEnvVars,omitempty"`
	AppDars                *string   `json:"appDars,omitempty"`
	NameService            App       `json:"appInfoLedgerNameService"`
	ValidatorApp           App       `json:"appInfoValidator"`
	Wallet                 *App      `json:"appInfoWallet,omitempty"`
	ContactPoint           *string   `json:"contactPoint,omitempty"`
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

// App is the environment and resources of one application.
type App struct {
	// EnvVars is written as null when there are none (the stored form
	// keeps it so).
	// +nullable
	EnvVars   []EnvVar   `json:"envVars"`
	Resources *Resources `json:"resources,omitempty"`
}

// Resources are a workload's compute resources (Kubernetes quantities).
type Resources struct {
	CPULimit        *string `json:"cpuLimit,omitempty"`
	CPURequest      *string `json:"cpuRequested,omitempty"`
	ImagePullSecret *string `json:"imagePullSecret,omitempty"`
	MemoryLimit     *string `json:"memoryLimit,omitempty"`
	MemoryRequest   *string `json:"memoryRequested,omitempty"`
	Replicas        *int32  `json:"replicas,omitempty"`
}

// EnvVar is an environment variable with a literal value or one taken from
// a Secret's key.
type EnvVar struct {
	Name      *string       `json:"name,omitempty"`
	Value     *string       `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is where an environment variable's value comes from.
type EnvVarSource struct {
	SecretKeyRef *SecretKeySelector `json:"secretKeyRef,omitempty"`
}

// SecretKeySelector names a key of a Secret in the validator's namespace.
type SecretKeySelector struct {
	Key      *string `json:"key,omitempty"`
	Name     *string `json:"name,omitempty"`
	Optional *bool   `json:"optional,omitempty"`
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
	Args         *[]string      `json:"args,omitempty"`
	Image        *string        `json:"image,omitempty"`
	Resources    *Resources     `json:"resources,omitempty"`
	VolumeMounts *[]VolumeMount `json:"volumeMounts,omitempty"`
	Volumes      *[]Volume      `json:"volumes,omitempty"`
}

// VolumeMount mounts a volume into a container.
type VolumeMount struct {
	Name     *string `json:"name,omitempty"`
	Path     *string `json:"path,omitempty"`
	ReadOnly *bool   `json:"readOnly,omitempty"`
	SubPath  *string `json:"subPath,omitempty"`
}

// Volume is a pod volume with one source (a subset of Kubernetes').
type Volume struct {
	ConfigMap             *ConfigMapVolume `json:"configMap,omitempty"`
	EmptyDir              *EmptyDirVolume  `json:"emptyDir,omitempty"`
	HostPath              *HostPathVolume  `json:"hostPath,omitempty"`
	Name                  *string          `json:"name,omitempty"`
	PersistentVolumeClaim *ClaimVolume     `json:"persistentVolumeClaim,omitempty"`
	Secret                *SecretVolume    `json:"secret,omitempty"`
}

// ConfigMapVolume is a volume filled from a config map.
type ConfigMapVolume struct {
	DefaultMode *int32       `json:"defaultMode,omitempty"`
	Items       *[]KeyToPath `json:"items,omitempty"`
	Name        *string      `json:"name,omitempty"`
	Optional    *bool        `json:"optional,omitempty"`
}

// SecretVolume is a volume filled from a Secret.
type SecretVolume struct {
	DefaultMode *int32       `json:"defaultMode,omitempty"`
	Items       *[]KeyToPath `json:"items,omitempty"`
	Optional    *bool        `json:"optional,omitempty"`
	SecretName  *string      `json:"secretName,omitempty"`
}

// KeyToPath projects one key to a file.
type KeyToPath struct {
	Key  *string `json:"key,omitempty"`
	Mode *int32  `json:"mode,omitempty"`
	Path *string `json:"path,omitempty"`
}

// EmptyDirVolume is an empty directory that lives as long as the pod.
type EmptyDirVolume struct {
	Medium    *string    `json:"medium,omitempty"`
	SizeLimit *SizeLimit `json:"sizeLimit,omitempty"`
}

// SizeLimit is a quantity split into amount and unit.
type SizeLimit struct {
	Amount *string `json:"amount,omitempty"`
	Format *string `json:"format,omitempty"`
}

// HostPathVolume is a directory of the node.
type HostPathVolume struct {
	Path *string `json:"path,omitempty"`
	Type *string `json:"type,omitempty"`
}

// ClaimVolume is a volume backed by a persistent volume claim.
type ClaimVolume struct {
	ClaimName *string `json:"claimName,omitempty"`
	ReadOnly  *bool   `json:"readOnly,omitempty"`
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
// ValidatorConfigVersion. Version 0 (no marker, written before it existed)
// has the layout of version 1. A newer version is refused with
// ErrConfigVersion, and a field this server does not know with an error:
// re-encoding would drop it silently.
func DecodeValidatorConfig(b []byte) (ValidatorConfig, error) {
	// One strict pass in the common case (a list decodes a configuration
	// per row); the version marker is read on its own only to explain a
	// failure.
	var c ValidatorConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&c)
	if err == nil && c.Version >= 0 && c.Version <= ValidatorConfigVersion {
		return c, nil
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
	if version > ValidatorConfigVersion {
		return ValidatorConfig{}, fmt.Errorf("%w: version %d was written by a newer server; this one reads up to version %d",
			ErrConfigVersion, version, ValidatorConfigVersion)
	}
	return ValidatorConfig{}, fmt.Errorf("stored validator configuration (version %d): %w", version, err)
}
