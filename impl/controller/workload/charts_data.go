package workload

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// In chart mode, Splice's charts read Secrets that an installer creates by
// hand beside the values, and connect to a database server they do not run
// (splice-postgres is deprecated). The leader writes those Secrets into the
// release's namespace (ChartSecrets) and runs the validator's own
// PostgreSQL there (ChartPostgres); ChartDatabase is what the charts'
// persistence values point at. The facts (Splice 0.7.3) are in
// testdata/splice-chart-secrets.yaml.

// Names and keys of the Secrets the charts read.
const (
	// ChartDatabaseSecret is the charts' persistence.secretName (their
	// default); its key ChartDatabaseSecretKey is fixed by the charts.
	ChartDatabaseSecret    = "postgres-secrets"
	ChartDatabaseSecretKey = "postgresPassword"
	// ChartLedgerAPIAuthSecret is the validator app's ledger API client
	// (splice-validator reads it by this name; splice-participant's
	// participantAdminUserNameFrom must point at its ledger-api-user).
	ChartLedgerAPIAuthSecret = "splice-app-validator-ledger-api-auth"
	// ChartLedgerAPIUserKey is the key of the ledger API user in
	// ChartLedgerAPIAuthSecret.
	ChartLedgerAPIUserKey = "ledger-api-user"
	// ChartOnboardingSecret is the sponsor's onboarding secret, written
	// only for a validator that is onboarded with one: splice-validator's
	// onboardingSecretFrom must point at its key ChartOnboardingSecretKey.
	ChartOnboardingSecret    = "splice-app-validator-onboarding-validator"
	ChartOnboardingSecretKey = "secret"
	// The UIs' OIDC clients, written unless the wallet is disabled.
	ChartWalletUIAuthSecret = "splice-app-wallet-ui-auth"
	ChartCNSUIAuthSecret    = "splice-app-cns-ui-auth"
)

// The internal database as the charts' init steps reach it: they connect
// as this user to this database whatever the values say (Splice 0.7.3), so
// the validator's own PostgreSQL is initialised with both in chart mode.
const (
	ChartDatabaseUser      = domain.ChartDatabaseUser
	ChartBootstrapDatabase = "cantonnet"
)

// ChartSecret is one Secret the charts read, as v's configuration fills it.
type ChartSecret struct {
	Name string
	Keys []ChartSecretKey
}

// ChartSecretKey is one key of a ChartSecret: either Value (a public
// value of the configuration: a client id, a URL, the audience, a user
// name) or From, a key of a Secret in the Validator's namespace whose value
// is copied (the secret values, kept where the built-in layout reads them).
type ChartSecretKey struct {
	Key   string
	Value string
	From  *corev1.SecretKeySelector
}

// ChartSecrets are the Secrets v's release reads, with the values the
// built-in layout gives the same variables: the database password and the
// ledger API client's secret from the Secrets the built-in layout reads
// them from (spec.secrets, else the conventional names), the public parts
// from spec.config.auth (the identity provider's clients, or the
// operator's with custom auth). The onboarding Secret only when the
// validator is onboarded with a secret, the UIs' only when its wallet is
// enabled.
func ChartSecrets(v *v1alpha1.Validator) []ChartSecret {
	b := newLayout(v)
	auth := b.auth()
	out := []ChartSecret{
		{Name: ChartDatabaseSecret, Keys: []ChartSecretKey{{Key: ChartDatabaseSecretKey, From: b.databasePassword().SecretKeyRef}}},
		{Name: ChartLedgerAPIAuthSecret, Keys: []ChartSecretKey{
			{Key: ChartLedgerAPIUserKey, Value: auth.LedgerAPIUser},
			{Key: "audience", Value: auth.Audience},
			{Key: "url", Value: ptr.Deref(auth.OIDCConfigURL, "")},
			{Key: "client-id", Value: auth.LedgerAPIClient},
			{Key: ledgerAPIAuthSecretKey, From: b.ledgerAPIClientSecret()},
		}},
	}
	if ref := b.onboardingSecret(); ref != nil {
		out = append(out, ChartSecret{Name: ChartOnboardingSecret, Keys: []ChartSecretKey{{Key: ChartOnboardingSecretKey, From: ref}}})
	}
	if WalletEnabled(b.v) {
		ui := func(name, clientID string) ChartSecret {
			return ChartSecret{Name: name, Keys: []ChartSecretKey{{Key: "url", Value: ptr.Deref(auth.OIDCAuthorityURL, "")}, {Key: "client-id", Value: clientID}}}
		}
		out = append(out, ui(ChartWalletUIAuthSecret, auth.WalletClient), ui(ChartCNSUIAuthSecret, auth.NameServiceClient))
	}
	return out
}

// ChartPersistence is where the charts' persistence values point for v
// (splice-participant's and splice-validator's persistence.*).
type ChartPersistence struct {
	// Host and Port: the internal database's Service in the release's
	// namespace, or the operator's external database.
	Host string
	Port int32
	// User: splice-validator's persistence.user. splice-participant sets
	// no user, so the participant connects as its image's default
	// (ChartDatabaseUser): for an external database with another user,
	// the participant's additionalEnvVars must set
	// CANTON_PARTICIPANT_POSTGRES_USER to User.
	User string
	// The databases and schemas (persistence.databaseName and
	// persistence.schema of each chart): the participant's is one per
	// migration id, as in the built-in layout.
	ParticipantDatabase, ParticipantSchema string
	ValidatorDatabase, ValidatorSchema     string
	// SecretName holds the password under ChartDatabaseSecretKey
	// (persistence.secretName of both charts).
	SecretName string
	// InitImage is persistence.initImageName: the image of the
	// validator's own database, whose psql the init steps run.
	InitImage string
	// ChartInit: the charts' own init steps create the apps' databases
	// (persistence.enablePgInitContainer true). They connect as
	// ChartDatabaseUser to ChartBootstrapDatabase, which the internal
	// database has. An external database need not: then ChartInit is
	// false and ParticipantInit and ValidatorInit are the init containers
	// (extraInitContainers of each chart) that create the databases as
	// User, as the built-in layout's do.
	ChartInit                      bool
	ParticipantInit, ValidatorInit *corev1.Container
}

// ChartDatabase is where v's charts find its database.
func ChartDatabase(v *v1alpha1.Validator) ChartPersistence {
	b := newChartLayout(v)
	p := ChartPersistence{
		Host: b.databaseHost(), Port: databasePortNumber(b.databasePort()), User: b.databaseUser(),
		ParticipantDatabase: b.participantDatabase(), ParticipantSchema: participantSchema,
		ValidatorDatabase: validatorDatabase, ValidatorSchema: validatorSchema,
		SecretName: ChartDatabaseSecret, InitImage: b.postgresImage(), ChartInit: !v.Spec.ExternalDatabase,
	}
	if v.Spec.ExternalDatabase {
		participant, validator := b.createDatabase(p.ParticipantDatabase), b.createDatabase(p.ValidatorDatabase)
		p.ParticipantInit, p.ValidatorInit = &participant, &validator
	}
	return p
}

// ChartPostgres is the validator's own PostgreSQL in chart mode: the
// StatefulSet and Service of the built-in layout, in the release's
// namespace (labelled with the validator, without an owner: an owner
// reference cannot cross namespaces, and the namespace's deletion removes
// them), initialised with ChartDatabaseUser and ChartBootstrapDatabase and
// the password of ChartDatabaseSecret. None for an external database.
func ChartPostgres(v *v1alpha1.Validator) []client.Object {
	if v.Spec.ExternalDatabase {
		return nil
	}
	b := newChartLayout(v)
	return []client.Object{b.postgres(), b.service(Postgres)}
}

// databasePortNumber is a port as the charts' values take it (a number);
// the API's port is text, checked to be a number when the validator was
// written: anything else is the default port.
func databasePortNumber(port string) int32 {
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		n, _ = strconv.ParseInt(defaultDatabasePort, 10, 32)
	}
	return int32(n)
}
