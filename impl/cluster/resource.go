package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	validatorac "github.com/validator-manager/validator-manager/gen/applyconfiguration/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/schedule"
)

// The Validator custom resource (deploy/crds/validator-manager.io_validators.yaml, generated from impl/apis/v1alpha1).
const (
	Group    = "validator-manager.io"
	Version  = "v1alpha1"
	Kind     = "Validator"
	Resource = "validators"
)

// ValidatorResource is the group/version/resource of the Validator custom resource.
var ValidatorResource = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// Labels on every object the gateway writes.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "validator-manager"
	ValidatorLabel = "validator-manager.io/validator"
	// ValidatorNamespaceLabel names the namespace of the Validator an
	// object belongs to, on the objects the workload controller applies:
	// in chart mode they live in a namespace of their own
	// (workload.ReleaseNamespace), where the Manager's cache sees only
	// objects that carry it (ReleaseCache).
	ValidatorNamespaceLabel = "validator-manager.io/validator-namespace"
	managedSelector         = ManagedByLabel + "=" + ManagedBy
	// InstallationLabel on a Validator resource names the server
	// installation (its database) that manages it: the reconciler removes
	// only its own resources that lack a record, never those of another
	// installation sharing the namespace, nor any when it is pointed at a
	// fresh database.
	InstallationLabel = "validator-manager.io/installation"
)

// Keys inside the validator's Secrets.
const (
	OnboardingSecretKey    = "secret"
	LedgerAPIAuthSecretKey = "client-secret"
	DatabaseSecretKey      = "password"
	// PreviousDatabasePasswordKey holds, once an edit gave the database a
	// new password, the one it replaced: what the running internal
	// database accepts until the workload controller's rotation ran.
	PreviousDatabasePasswordKey = "previous-password"
)

// DatabasePasswordLabel on the database Secret is PasswordDigest of its
// password (a label: the caches keep labels, never values or annotations).
const DatabasePasswordLabel = "validator-manager.io/database-password"

// DatabasePasswordAnnotation on the pod templates of the apps that log in
// to the internal database is PasswordDigest of the password they start
// with: the one the database takes (the workload controller's rotation).
const DatabasePasswordAnnotation = "validator-manager.io/database-password"

// PasswordDigest names a password without showing it: the first 16 hex
// digits of its SHA-256.
func PasswordDigest(password []byte) string {
	sum := sha256.Sum256(password)
	return hex.EncodeToString(sum[:8])
}

// Names of the backup objects of a validator.
func BackupCronJobName(validator string) string { return validator + "-backup" }
func BackupPVCName(validator string) string     { return validator + "-backups" }

// DatabaseHost is the Service of a validator's internal PostgreSQL, by the
// convention the reconciler follows (deploy/README.md).
func DatabaseHost(validator string) string { return validator + "-postgres" }

func labelsFor(validator string) map[string]string {
	return map[string]string{ManagedByLabel: ManagedBy, ValidatorLabel: validator}
}

// secretSlot is one of a validator's Secrets: its spec.secrets entry, its
// flag in a domain.WrittenSecrets, its name and the key that holds the
// value.
type secretSlot struct {
	field func(*secretRefsAC, *validatorac.SecretKeyRefApplyConfiguration) *secretRefsAC // sets its spec.secrets entry
	flag  func(*domain.WrittenSecrets) *bool
	name  string
	key   string
	value string
}

type secretRefsAC = validatorac.ValidatorSecretRefsApplyConfiguration

func secretSlots(validator string, s domain.ValidatorSecrets) []secretSlot {
	return []secretSlot{
		{(*secretRefsAC).WithOnboarding, func(w *domain.WrittenSecrets) *bool { return &w.Onboarding },
			domain.OnboardingSecretName(validator), OnboardingSecretKey, s.OnboardingSecret},
		{(*secretRefsAC).WithLedgerAPIAuth, func(w *domain.WrittenSecrets) *bool { return &w.LedgerAPIAuth },
			domain.LedgerAPIAuthSecretName(validator), LedgerAPIAuthSecretKey, s.LedgerAPIClientSecret},
		{(*secretRefsAC).WithDatabase, func(w *domain.WrittenSecrets) *bool { return &w.Database },
			domain.DatabaseSecretName(validator), DatabaseSecretKey, s.DatabasePassword},
	}
}

// slotOf tells whether a Secret's name is one of a validator's Secrets: the
// validator and the key its pods read.
func slotOf(secret string) (validator, key string, ok bool) {
	for _, s := range secretSlots("", domain.ValidatorSecrets{}) {
		if v, found := strings.CutSuffix(secret, s.name); found && v != "" {
			return v, s.key, true
		}
	}
	return "", "", false
}

// validatorSpec is the resource's spec for v and its pruning schedule (nil:
// none), without spec.secrets, which referenceSecrets maintains. spec.config
// is v's configuration in the current stored format (a row of an older
// version is written in the new one); what the cluster's own objects need
// from it is written beside it as typed fields.
func validatorSpec(v domain.Validator, prune *domain.PruneSchedule) (*validatorac.ValidatorSpecApplyConfiguration, error) {
	spec := validatorac.ValidatorSpec().
		WithCustomAuth(v.CustomAuth).
		WithExternalDatabase(v.ExternalDatabase).
		WithMigration(validatorac.MigrationSpec().WithID(v.MigrationID).WithMigrating(v.Migrating))
	config := validatorac.ValidatorConfig()
	if len(v.Spec) > 0 {
		c, err := v.Config()
		if err != nil {
			return nil, err
		}
		raw, err := domain.EncodeValidatorConfig(c)
		if err != nil {
			return nil, err
		}
		// The stored form is the configuration type's JSON, and its apply
		// configuration is generated from the same type: every field set
		// in the stored form is set in the apply.
		if err := json.Unmarshal(raw, config); err != nil {
			return nil, err
		}
		if class := c.StorageClass(); class != "" {
			spec.WithStorageClass(class)
		}
		if user := c.DatabaseUser(); user != "" {
			spec.WithDatabase(validatorac.DatabaseRef().WithUser(user))
		}
	}
	spec.WithConfig(config)
	if v.DatabaseStorage != "" {
		spec.WithDatabaseStorage(v.DatabaseStorage)
	}
	if prune != nil {
		spec.WithParticipantPruningSchedule(pruneSpec(prune))
	}
	return spec, nil
}

// secretRefs is spec.secrets naming the validator's Secrets that w has;
// nil when it has none.
func secretRefs(validator string, w domain.WrittenSecrets) *secretRefsAC {
	if w == (domain.WrittenSecrets{}) {
		return nil
	}
	refs := validatorac.ValidatorSecretRefs()
	for _, s := range secretSlots(validator, domain.ValidatorSecrets{}) {
		if *s.flag(&w) {
			s.field(refs, validatorac.SecretKeyRef().WithName(s.name).WithKey(s.key))
		}
	}
	return refs
}

// pruneSpec is spec.participantPruningSchedule in the Canton/Helm format.
// The cron is written in the form Canton's parser (log4j) accepts: it
// requires a "?" in day-of-month or day-of-week, which the API does not.
func pruneSpec(p *domain.PruneSchedule) *validatorac.PruningScheduleApplyConfiguration {
	cron := p.Cron
	if c, err := schedule.ParsePrune(p.Cron); err == nil {
		cron = c.Canton()
	}
	return validatorac.PruningSchedule().
		WithCron(cron).
		WithMaxDuration(durationText(p.MaxDurationText, p.MaxDuration)).
		WithRetention(durationText(p.RetentionText, p.Retention))
}

// singleUnit is a duration HOCON reads: one number, one unit.
var singleUnit = regexp.MustCompile(`^[0-9]+[dhms]$`)

// durationText keeps the caller's text when Canton's HOCON reads it ("5m",
// "48h"); otherwise ("1h30m", which the API accepts) it writes the duration
// in its largest whole unit ("90m").
func durationText(text string, d time.Duration) string {
	if singleUnit.MatchString(text) {
		return text
	}
	switch {
	case d != 0 && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d != 0 && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d != 0 && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return fmt.Sprintf("%ds", d/time.Second)
	}
}
