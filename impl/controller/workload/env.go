package workload

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The apps' databases and schemas as the charts name them (the
// participant's database is per migration id), and the database every
// PostgreSQL server has, which the init containers connect to.
const (
	participantSchema         = "participant"
	participantDatabasePrefix = "participant_"
	validatorSchema           = "validator"
	validatorDatabase         = "cantonnet_validator"
	maintenanceDatabase       = "postgres"
)

// participantEnv is the participant's environment as the chart writes it,
// then the configuration's envVars.
func (b layout) participantEnv() []corev1.EnvVar {
	auth := b.auth()
	env := []corev1.EnvVar{
		{Name: "JAVA_TOOL_OPTIONS", Value: ParticipantJVMOptions(b.v)},
		{Name: "CANTON_PARTICIPANT_POSTGRES_SERVER", Value: b.databaseHost()},
		{Name: "CANTON_PARTICIPANT_POSTGRES_PORT", Value: b.databasePort()},
		{Name: "CANTON_PARTICIPANT_POSTGRES_SCHEMA", Value: participantSchema},
		{Name: "CANTON_PARTICIPANT_POSTGRES_DB", Value: b.participantDatabase()},
		{Name: "CANTON_PARTICIPANT_POSTGRES_USER", Value: b.databaseUser()},
		{Name: "CANTON_PARTICIPANT_POSTGRES_PASSWORD", ValueFrom: b.databasePassword()},
		{Name: "CANTON_PARTICIPANT_ADMIN_USER_NAME", Value: auth.LedgerAPIUser},
		{Name: "AUTH_JWKS_URL", Value: ptr.Deref(auth.JWKSURL, "")},
		{Name: "AUTH_TARGET_AUDIENCE", Value: auth.Audience},
	}
	return AppendEnv(env, b.cfg.Participant.EnvVars)
}

// validatorAppEnv is the validator app's environment, in the chart's order.
func (b layout) validatorAppEnv() []corev1.EnvVar {
	c := b.cfg.Cluster
	spec := b.v.Spec
	add := func(env []corev1.EnvVar, name, value string) []corev1.EnvVar {
		return append(env, corev1.EnvVar{Name: name, Value: value})
	}
	env := []corev1.EnvVar{
		{Name: "JAVA_TOOL_OPTIONS", Value: c.DefaultJVMOptions},
		{Name: "SPLICE_APP_VALIDATOR_PARTICIPANT_ADDRESS", Value: b.name(Participant)},
	}
	if dars := ptr.Deref(c.AppDars, ""); dars != "" {
		env = add(env, "SPLICE_APP_DARS", dars)
	}
	env = AppendEnv(env, ptr.Deref(c.AdditionalUsersEnvVars, nil))
	if other := ptr.Deref(c.AdditionalConfig, ""); other != "" {
		env = add(env, "ADDITIONAL_CONFIG_OTHER", other)
	}
	if c.SVSponsorAddress != "" {
		env = add(env, "SPLICE_APP_VALIDATOR_SV_SPONSOR_ADDRESS", c.SVSponsorAddress)
		if ref := b.onboardingSecret(); ref != nil {
			env = append(env, corev1.EnvVar{Name: "SPLICE_APP_VALIDATOR_ONBOARDING_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: ref}})
		} else {
			// Onboarding without a secret works on DevNet only, as in the chart.
			env = add(env, "SPLICE_APP_DEVNET", "1")
		}
	} else {
		env = add(env, "ADDITIONAL_CONFIG_NO_ONBOARDING", "canton.validator-apps.validator_backend.onboarding = null\n")
	}
	env = add(env, "SPLICE_APP_VALIDATOR_SCAN_ADDRESS", c.ScanAddress)
	env = add(env, "SPLICE_APP_VALIDATOR_WALLET_USER_NAME", WalletUser(b.v))
	if c.PartyHint != "" {
		env = add(env, "SPLICE_APP_VALIDATOR_PARTY_HINT", c.PartyHint)
	}
	if ptr.Deref(c.SVValidator, false) {
		env = add(env, "SPLICE_APP_VALIDATOR_SV_VALIDATOR", "true")
	} else {
		env = add(env, "ADDITIONAL_CONFIG_BFT_SCAN", "canton.validator-apps.validator_backend.scan-client.type = \"bft\"\n"+
			"canton.validator-apps.validator_backend.scan-client.seed-urls = [ ${_scan.admin-api.address} ]\n")
	}
	if c.SequencersFromScan != nil && !*c.SequencersFromScan {
		env = add(env, "ADDITIONAL_CONFIG_STATIC_SEQUENCER_URL",
			"canton.validator-apps.validator_backend.domains.global.url = "+strconv.Quote(ptr.Deref(c.SynchronizerURL, "")))
	}
	for i, d := range ptr.Deref(c.ExtraSynchronizers, nil) {
		env = add(env, "ADDITIONAL_CONFIG_EXTRA_DOMAIN_"+strconv.Itoa(i), fmt.Sprintf(
			"canton.validator-apps.validator_backend.domains.extra.%d = {\n  alias = %s\n  url = %s\n}\n",
			i, strconv.Quote(ptr.Deref(d.Alias, "")), strconv.Quote(ptr.Deref(d.URL, ""))))
	}
	if t := c.TopUp; t != nil && ptr.Deref(t.Enable, false) {
		env = add(env, "ADDITIONAL_CONFIG_TOPUPS", fmt.Sprintf(
			"canton.validator-apps.validator_backend.domains.global.buy-extra-traffic.target-throughput = %d\n"+
				"canton.validator-apps.validator_backend.domains.global.buy-extra-traffic.min-topup-interval = %s\n",
			ptr.Deref(t.TargetThroughput, 0), ptr.Deref(t.MinTopupInterval, "")))
	}
	env = add(env, "ADDITIONAL_CONFIG_PERSISTENCE", fmt.Sprintf(
		"canton.validator-apps.validator_backend.storage {\n  config {\n    properties = {\n"+
			"      databaseName = %q\n      currentSchema = %q\n      serverName = %q\n      portNumber = %s\n"+
			"      user = %q\n      password = ${SPLICE_APP_POSTGRES_PASSWORD}\n    }\n  }\n}\n",
		validatorDatabase, validatorSchema, b.databaseHost(), b.databasePort(), b.databaseUser()))
	env = append(env, corev1.EnvVar{Name: "SPLICE_APP_POSTGRES_PASSWORD", ValueFrom: b.databasePassword()})
	if bk := c.IdentitiesBackup; bk != nil {
		env = add(env, "ADDITIONAL_CONFIG_SPLICE_APP_VALIDATOR_PARTICIPANT_IDENTITIES_DUMP_PERIODIC_BACKUP", fmt.Sprintf(
			"canton.validator-apps.validator_backend.participant-identities-backup = {\n  location {\n    type = gcp\n    bucket {\n"+
				"      project-id = %s\n      bucket-name = %s\n      credentials {\n        type = service-account\n"+
				"        json-credentials = ${SPLICE_APP_VALIDATOR_BACKUP_BUCKET_SERVICE_ACCOUNT_CREDENTIALS}\n      }\n    }\n"+
				"    prefix = %q\n  }\n  backup-interval = %s\n}\n",
			bk.BucketProjectID, bk.BucketName, bk.Prefix, bk.Interval))
		env = append(env, corev1.EnvVar{Name: "SPLICE_APP_VALIDATOR_BACKUP_BUCKET_SERVICE_ACCOUNT_CREDENTIALS", ValueFrom: secretKey(bk.BucketSecretName, "json-credentials")})
	}
	if imp := c.IdentitiesImport; imp != nil {
		id := ""
		if imp.NewParticipantIdentifier != "" {
			id = "  new-participant-identifier = " + strconv.Quote(imp.NewParticipantIdentifier) + "\n"
		}
		env = add(env, "ADDITIONAL_CONFIG_SPLICE_APP_SV_PARTICIPANT_IDENTITIES_DUMP_IMPORT",
			"canton.validator-apps.validator_backend.participant-bootstrapping-dump {\n  type = file\n  file = "+identitiesDumpPath+"/content\n"+id+"}\n")
	}
	if ptr.Deref(c.MigrateValidatorParty, false) {
		env = add(env, "ADDITIONAL_CONFIG_MIGRATE_VALIDATOR_PARTY",
			"canton.validator-apps.validator_backend.migrate-validator-party.scan.admin-api.url = ${_scan.admin-api.address}\n")
	}
	env = add(env, "ADDITIONAL_CONFIG_MIGRATION_ID",
		fmt.Sprintf("canton.validator-apps.validator_backend {\n  domain-migration-id = %d\n}\n", spec.Migration.ID))
	if b.migrationDump() {
		if spec.Migration.Migrating {
			env = add(env, "ADDITIONAL_CONFIG_VALIDATOR_MIGRATION_RESTORE",
				"canton.validator-apps.validator_backend.restore-from-migration-dump = "+strconv.Quote(migrationDumpFile)+"\n")
		} else {
			env = add(env, "ADDITIONAL_CONFIG_GLOBAL_DOMAIN_UPGRADE_DUMP_PATH",
				"canton.validator-apps.validator_backend.domain-migration-dump-path = "+strconv.Quote(migrationDumpFile)+"\n")
		}
	}
	env = add(env, "ADDITIONAL_CONFIG_ENABLE_WALLET",
		fmt.Sprintf("canton.validator-apps.validator_backend.enable-wallet = %q\n", strconv.FormatBool(WalletEnabled(b.v))))
	if len(b.cfg.WalletSweeps) > 0 {
		var s strings.Builder
		s.WriteString("canton.validator-apps.validator_backend.wallet-sweep {\n")
		for _, w := range b.cfg.WalletSweeps {
			fmt.Fprintf(&s, "  %q {\n    max-balance-usd = %s\n    min-balance-usd = %s\n    receiver = %q\n    use-transfer-preapproval = %t\n  }\n",
				w.SenderPartyID, w.MaxBalanceUSD, w.MinBalanceUSD, w.ReceiverPartyID, w.UseTransferPreapproval)
		}
		s.WriteString("}\n")
		env = add(env, "ADDITIONAL_CONFIG_WALLET_SWEEP", s.String())
	}
	if p := spec.ParticipantPruningSchedule; p != nil {
		env = add(env, "ADDITIONAL_CONFIG_PARTICIPANT_PRUNING", fmt.Sprintf(
			"canton.validator-apps.validator_backend.participant-pruning-schedule {\n  cron = %q\n  max-duration = %q\n  retention = %q\n}\n",
			p.Cron, p.MaxDuration, p.Retention))
	}
	env = add(env, "FAIL_ON_APP_VERSION_MISMATCH", strconv.FormatBool(ptr.Deref(c.FailOnAppVersionMismatch, true)))
	env = add(env, "SPLICE_APP_CONTACT_POINT", ptr.Deref(c.ContactPoint, ""))
	env = add(env, "SPLICE_APP_VALIDATOR_PARTICIPANT_IDENTIFIER", NodeIdentifier(b.v))
	env = append(env, b.validatorAuthEnv()...)
	env = AppendEnv(env, c.ValidatorApp.EnvVars)
	return AppendEnv(env, ptr.Deref(b.cfg.EnvVars, nil))
}

// validatorAuthEnv is the validator app's authentication: unlike the
// chart's Secret, the public parts come from the configuration's auth and
// only the client secret from a Secret. The token URL is the OIDC
// configuration URL (the image's well-known-config-url).
func (b layout) validatorAuthEnv() []corev1.EnvVar {
	auth := b.auth()
	return []corev1.EnvVar{
		{Name: "SPLICE_APP_VALIDATOR_AUTH_AUDIENCE", Value: auth.Audience},
		{Name: "SPLICE_APP_VALIDATOR_AUTH_JWKS_URL", Value: ptr.Deref(auth.JWKSURL, "")},
		{Name: "SPLICE_APP_VALIDATOR_LEDGER_API_AUTH_USER_NAME", Value: auth.LedgerAPIUser},
		{Name: "SPLICE_APP_VALIDATOR_LEDGER_API_AUTH_AUDIENCE", Value: auth.Audience},
		{Name: "SPLICE_APP_VALIDATOR_LEDGER_API_AUTH_URL", Value: ptr.Deref(auth.OIDCConfigURL, "")},
		{Name: "SPLICE_APP_VALIDATOR_LEDGER_API_AUTH_CLIENT_ID", Value: auth.LedgerAPIClient},
		{Name: "SPLICE_APP_VALIDATOR_LEDGER_API_AUTH_CLIENT_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: b.ledgerAPIClientSecret()}},
	}
}

// ledgerAPIClientSecret is the ledger API client's secret.
func (b layout) ledgerAPIClientSecret() *corev1.SecretKeySelector {
	return secret(b.refs().LedgerAPIAuth, domain.LedgerAPIAuthSecretName(b.v.Name), ledgerAPIAuthSecretKey).SecretKeyRef
}

// onboardingSecret is the onboarding secret of a validator with a sponsor
// and one, else nil.
func (b layout) onboardingSecret() *corev1.SecretKeySelector {
	ref := b.refs().Onboarding
	if b.cfg.Cluster.SVSponsorAddress == "" || ref == nil {
		return nil
	}
	return secretKey(ref.Name, ref.Key).SecretKeyRef
}

func (b layout) databaseHost() string {
	if b.v.Spec.ExternalDatabase && b.cfg.Database != nil && ptr.Deref(b.cfg.Database.Hostname, "") != "" {
		return *b.cfg.Database.Hostname
	}
	return b.name(Postgres)
}

func (b layout) databasePort() string {
	if b.v.Spec.ExternalDatabase && b.cfg.Database != nil && ptr.Deref(b.cfg.Database.Port, "") != "" {
		return *b.cfg.Database.Port
	}
	return defaultDatabasePort
}

// databaseUser is the spec's database user, else postgres; in chart mode
// the internal database's is the one the charts' init steps connect as.
func (b layout) databaseUser() string {
	if b.chart && !b.v.Spec.ExternalDatabase {
		return ChartDatabaseUser
	}
	if b.v.Spec.Database != nil && b.v.Spec.Database.User != "" {
		return b.v.Spec.Database.User
	}
	return cmp.Or(b.cfg.DatabaseUser(), defaultDatabaseUser)
}

// participantDatabase: a new migration id starts a new database, as with
// the charts.
func (b layout) participantDatabase() string {
	return participantDatabasePrefix + strconv.Itoa(int(b.v.Spec.Migration.ID))
}

// databasePassword is the database password's Secret; in chart mode the
// charts' Secret, which holds a copy (ChartSecrets).
func (b layout) databasePassword() *corev1.EnvVarSource {
	if b.chart {
		return secretKey(ChartDatabaseSecret, ChartDatabaseSecretKey)
	}
	return secret(b.refs().Database, domain.DatabaseSecretName(b.v.Name), databasePasswordKey)
}

func (b layout) refs() v1alpha1.ValidatorSecretRefs {
	return ptr.Deref(b.v.Spec.Secrets, v1alpha1.ValidatorSecretRefs{})
}

// secret is ref when present, else the conventional Secret name and key.
func secret(ref *v1alpha1.SecretKeyRef, name, key string) *corev1.EnvVarSource {
	if ref != nil {
		name, key = ref.Name, ref.Key
	}
	return secretKey(name, key)
}

func secretKey(name, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
}

// AppendEnv appends vars to env as the charts' additional-env-vars helper
// does: valueFrom wins over value, a nameless variable is skipped (the pod
// would be refused), and a name already set is replaced in place
// (server-side apply refuses duplicates).
func AppendEnv(env []corev1.EnvVar, vars []corev1.EnvVar) []corev1.EnvVar {
	for _, v := range vars {
		if v.Name == "" {
			continue
		}
		if v.ValueFrom != nil {
			v.Value = ""
		}
		if i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == v.Name }); i >= 0 {
			env[i] = v
		} else {
			env = append(env, v)
		}
	}
	return env
}
