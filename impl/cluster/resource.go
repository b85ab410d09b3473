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

// The Validator custom resource (deploy/crds, generated from impl/apis/v1alpha1).
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
	// ValidatorNamespaceLabel names the Validator's namespace on what the
	// workload controller applies: ReleaseCache sees only objects with it.
	ValidatorNamespaceLabel = "validator-manager.io/validator-namespace"
	managedSelector         = ManagedByLabel + "=" + ManagedBy
	// InstallationLabel names the installation (database) managing a
	// Validator: the reconciler never removes another installation's.
	InstallationLabel = "validator-manager.io/installation"
)

// Keys inside the validator's Secrets.
const (
	OnboardingSecretKey    = "secret"
	LedgerAPIAuthSecretKey = "client-secret"
	DatabaseSecretKey      = "password"
	// PreviousDatabasePasswordKey holds the password an edit replaced, which
	// the running database accepts until the rotation ran.
	PreviousDatabasePasswordKey = "previous-password"
)

// DatabasePasswordLabel on the database Secret is PasswordDigest of its
// password (a label: the caches keep labels, never values or annotations).
const DatabasePasswordLabel = "validator-manager.io/database-password"

// DatabasePasswordAnnotation on the database clients' pod templates is
// PasswordDigest of the password they start with, the one the database takes.
const DatabasePasswordAnnotation = "validator-manager.io/database-password"

// PasswordDigest names a password without showing it.
func PasswordDigest(password []byte) string {
	sum := sha256.Sum256(password)
	return hex.EncodeToString(sum[:8])
}

// Names of the backup objects of a validator.
func BackupCronJobName(validator string) string { return validator + "-backup" }
func BackupPVCName(validator string) string     { return validator + "-backups" }

// DatabaseHost is the Service of a validator's internal PostgreSQL.
func DatabaseHost(validator string) string { return validator + "-postgres" }

func labelsFor(validator string) map[string]string {
	return map[string]string{ManagedByLabel: ManagedBy, ValidatorLabel: validator}
}

// secretSlot is one of a validator's Secrets.
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

// slotOf names the validator whose Secret that is by its name, "" when none.
func slotOf(secret string) (validator string) {
	for _, s := range secretSlots("", domain.ValidatorSecrets{}) {
		if v, found := strings.CutSuffix(secret, s.name); found && v != "" {
			return v
		}
	}
	return ""
}

// validatorSpec is the resource's spec for v and prune (nil: none), but
// spec.secrets; spec.config is in the current stored format.
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
		// The apply configuration is generated from the stored form's type:
		// every field set in one is set in the other.
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

// secretRefs is spec.secrets naming the Secrets w has; nil when none.
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

// pruneSpec is spec.participantPruningSchedule in the Canton/Helm format:
// Canton's cron parser requires a "?" in day-of-month or day-of-week.
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

// durationText keeps the caller's text when Canton's HOCON reads it, else
// ("1h30m") writes the duration in its largest whole unit ("90m").
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
