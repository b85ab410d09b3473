package workload

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// In chart mode, Splice's charts read Secrets an installer makes by hand
// and a database they do not run (splice-postgres is deprecated): the
// leader writes both into the release's namespace. The facts (Splice 0.7.3)
// are in testdata/splice-chart-secrets.yaml.

// Names and keys of the Secrets the charts read.
const (
	// ChartDatabaseSecret is the charts' default persistence.secretName.
	ChartDatabaseSecret    = "postgres-secrets"
	ChartDatabaseSecretKey = "postgresPassword"
	// ChartLedgerAPIAuthSecret is the validator app's ledger API client;
	// splice-participant's participantAdminUserNameFrom must name its user.
	ChartLedgerAPIAuthSecret = "splice-app-validator-ledger-api-auth"
	ChartLedgerAPIUserKey    = "ledger-api-user"
	// ChartOnboardingSecret is the onboarding secret of a validator that
	// has one (splice-validator's onboardingSecretFrom).
	ChartOnboardingSecret    = "splice-app-validator-onboarding-validator"
	ChartOnboardingSecretKey = "secret"
	// The UIs' OIDC clients, written unless the wallet is disabled.
	ChartWalletUIAuthSecret = "splice-app-wallet-ui-auth"
	ChartCNSUIAuthSecret    = "splice-app-cns-ui-auth"
)

// The charts' init steps connect as this user to this database whatever
// the values say (Splice 0.7.3): the internal database has both.
const (
	ChartDatabaseUser      = domain.ChartDatabaseUser
	ChartBootstrapDatabase = "cantonnet"
)

// ChartSecret is one Secret the charts read, as v's configuration fills it.
type ChartSecret struct {
	Name string
	Keys []ChartSecretKey
}

// ChartSecretKey is one key of a ChartSecret: a public Value, or From, a
// key of a Secret in the Validator's namespace whose value is copied.
type ChartSecretKey struct {
	Key   string
	Value string
	From  *corev1.SecretKeySelector
}

// ChartSecrets are the Secrets v's release reads, with the values the
// built-in layout gives the same variables.
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

// ChartPersistence is where the charts' persistence values point for v.
type ChartPersistence struct {
	Host string
	Port int32
	// User: splice-participant sets none, so its image's default
	// (ChartDatabaseUser) unless additionalEnvVars set another.
	User                                   string
	ParticipantDatabase, ParticipantSchema string
	ValidatorDatabase, ValidatorSchema     string
	SecretName                             string
	InitImage                              string
	// ChartInit: the charts' init steps create the databases; they need the
	// internal database's ChartDatabaseUser, so for an external one the
	// built-in layout's init containers (ParticipantInit, ValidatorInit) do.
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

// ChartPostgres is the built-in layout's internal database in the
// release's namespace, as the charts expect it; none for an external one.
func ChartPostgres(v *v1alpha1.Validator) []client.Object {
	if v.Spec.ExternalDatabase {
		return nil
	}
	b := newChartLayout(v)
	return []client.Object{b.postgres(), b.service(Postgres)}
}

// databasePortNumber is port as a number; the API checked it is one, so
// anything else is the default.
func databasePortNumber(port string) int32 {
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		n, _ = strconv.ParseInt(defaultDatabasePort, 10, 32)
	}
	return int32(n)
}
