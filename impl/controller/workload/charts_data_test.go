package workload_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/controller/workload/splicefacts"
)

// secretValues is a ChartSecret as text per key: the value, or
// secret:<name>/<key> for a copied one.
func secretValues(s workload.ChartSecret) map[string]string {
	out := map[string]string{}
	for _, k := range s.Keys {
		out[k.Key] = k.Value
		if k.From != nil {
			out[k.Key] = "secret:" + k.From.Name + "/" + k.From.Key
		}
	}
	return out
}

// TestChartSecrets: the Secrets of a validator's release, by name, with
// each key's value or source.
func TestChartSecrets(t *testing.T) {
	issuer := "http://idp.example.test/realms/validators"
	uis := func(wallet, cns string) map[string]map[string]string {
		return map[string]map[string]string{
			workload.ChartWalletUIAuthSecret: {"url": issuer, "client-id": wallet},
			workload.ChartCNSUIAuthSecret:    {"url": issuer, "client-id": cns},
		}
	}
	ledger := map[string]string{"ledger-api-user": "service-account-v1-validator-app", "audience": "https://ledger.v1.example.test",
		"url": issuer + "/.well-known/openid-configuration", "client-id": "v1-validator-app", "client-secret": "secret:v1-ledger-api-auth/client-secret"}
	withUIs := func(m map[string]map[string]string) map[string]map[string]string {
		for k, v := range uis("v1-wallet-ui", "v1-ans-ui") {
			m[k] = v
		}
		return m
	}
	cases := map[string]struct {
		v    *v1alpha1.Validator
		want map[string]map[string]string
	}{
		"provider auth, internal database": {matrix()["provider auth, internal database"], withUIs(map[string]map[string]string{
			workload.ChartDatabaseSecret:      {"postgresPassword": "secret:v1-database/password"},
			workload.ChartLedgerAPIAuthSecret: ledger,
			workload.ChartOnboardingSecret:    {"secret": "secret:v1-onboarding/secret"},
		})},
		"wallet disabled: no UI Secrets": {matrix()["wallet disabled"], map[string]map[string]string{
			workload.ChartDatabaseSecret:      {"postgresPassword": "secret:v1-database/password"},
			workload.ChartLedgerAPIAuthSecret: ledger,
			workload.ChartOnboardingSecret:    {"secret": "secret:v1-onboarding/secret"},
		}},
		"no sponsor, no Secrets in spec yet: conventional names, no onboarding": {matrix()["no secrets in spec yet"], withUIs(map[string]map[string]string{
			workload.ChartDatabaseSecret:      {"postgresPassword": "secret:v1-database/password"},
			workload.ChartLedgerAPIAuthSecret: ledger,
		})},
		"operator's Secrets in spec, custom auth": {func() *v1alpha1.Validator {
			v := matrix()["custom auth"]
			v.Spec.Secrets.Database = &v1alpha1.SecretKeyRef{Name: "operator-db", Key: "pw"}
			v.Spec.Secrets.LedgerAPIAuth = &v1alpha1.SecretKeyRef{Name: "operator-auth", Key: "cs"}
			return v
		}(), map[string]map[string]string{
			workload.ChartDatabaseSecret: {"postgresPassword": "secret:operator-db/pw"},
			workload.ChartLedgerAPIAuthSecret: {"ledger-api-user": "ledger-user", "audience": "https://ledger.example.test",
				"url": "https://idp.example.test/.well-known/openid-configuration", "client-id": "ledger-client", "client-secret": "secret:operator-auth/cs"},
			workload.ChartOnboardingSecret:   {"secret": "secret:v1-onboarding/secret"},
			workload.ChartWalletUIAuthSecret: {"url": "https://idp.example.test", "client-id": "wallet-client"},
			workload.ChartCNSUIAuthSecret:    {"url": "https://idp.example.test", "client-id": "ans-client"},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := map[string]map[string]string{}
			for _, s := range workload.ChartSecrets(tc.v) {
				if _, dup := got[s.Name]; dup {
					t.Fatalf("Secret %s derived twice", s.Name)
				}
				got[s.Name] = secretValues(s)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("chart Secrets:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestChartSecretsAgainstFacts holds the derived Secrets of every validator
// of the matrix against what Splice's charts read: each Secret the charts
// read in the validator's case, each key not optional, holding the value
// the table names; no Secret or key the charts do not read.
func TestChartSecretsAgainstFacts(t *testing.T) {
	f := loadChartFacts(t)
	for name, v := range matrix() {
		t.Run(name, func(t *testing.T) {
			auth := v.Spec.Config.Auth
			secret := func(ref *v1alpha1.SecretKeyRef, name, key string) string {
				if ref != nil {
					return "secret:" + ref.Name + "/" + ref.Key
				}
				return "secret:" + name + "/" + key
			}
			refs := v.Spec.Secrets
			if refs == nil {
				refs = &v1alpha1.ValidatorSecretRefs{}
			}
			holds := map[string]string{
				"databasePassword":      secret(refs.Database, "v1-database", "password"),
				"ledgerApiClientSecret": secret(refs.LedgerAPIAuth, "v1-ledger-api-auth", "client-secret"),
				"onboardingSecret":      secret(refs.Onboarding, "", ""),
				"ledgerApiUser":         auth.LedgerAPIUser,
				"ledgerApiClientId":     auth.LedgerAPIClient,
				"audience":              auth.Audience,
				"oidcConfigUrl":         ptr.Deref(auth.OIDCConfigURL, ""),
				"oidcAuthorityUrl":      ptr.Deref(auth.OIDCAuthorityURL, ""),
				"walletClientId":        auth.WalletClient,
				"cnsClientId":           auth.NameServiceClient,
			}
			when := map[string]bool{
				"":           true,
				"onboarding": v.Spec.Config.Cluster.SVSponsorAddress != "" && refs.Onboarding != nil,
				"wallet":     !ptr.Deref(v.Spec.Config.Cluster.DisabledWallet, false),
			}
			got := map[string]map[string]string{}
			for _, s := range workload.ChartSecrets(v) {
				got[s.Name] = secretValues(s)
			}
			for _, fs := range f.Secrets {
				read, ok := when[fs.When]
				if !ok {
					t.Fatalf("facts: Secret %s: unknown case %q", fs.Name, fs.When)
				}
				have, written := got[fs.Name]
				delete(got, fs.Name)
				if written != read {
					t.Errorf("Secret %s (read by %v when %q): written %t, want %t", fs.Name, fs.ReadBy, fs.When, written, read)
					continue
				}
				for _, k := range fs.Keys {
					value, ok := have[k.Key]
					delete(have, k.Key)
					switch want, known := holds[k.Holds]; {
					case !written:
					case k.Optional && !ok:
					case !known:
						t.Errorf("facts: %s/%s holds %q, which the test does not know", fs.Name, k.Key, k.Holds)
					case !ok:
						t.Errorf("Secret %s lacks key %s (%s)", fs.Name, k.Key, k.Source)
					case value != want || want == "":
						t.Errorf("%s/%s = %q, want %s = %q", fs.Name, k.Key, value, k.Holds, want)
					}
				}
				if len(have) > 0 {
					t.Errorf("Secret %s has keys the charts do not read: %v", fs.Name, have)
				}
			}
			if len(got) > 0 {
				t.Errorf("Secrets the charts do not read: %v", got)
			}
		})
	}
}

// TestChartDatabase holds the internal database of chart mode and the
// persistence values against the charts' facts: the release's namespace, no
// owner, the user and bootstrap database the charts' init steps connect
// to, the password of the charts' Secret; the databases and schemas the
// apps use.
func TestChartDatabase(t *testing.T) {
	f := loadChartFacts(t).Database
	v := matrix()["custom auth"] // a database user of its own in the spec
	v.Spec.Database = &v1alpha1.DatabaseRef{User: "someone"}
	objs := workload.ChartPostgres(v)
	if len(objs) != 2 {
		t.Fatalf("chart postgres: %d objects, want a StatefulSet and a Service", len(objs))
	}
	ns := workload.ReleaseNamespace(v)
	for _, o := range objs {
		if o.GetNamespace() != ns || len(o.GetOwnerReferences()) != 0 || o.GetLabels()[workload.ValidatorLabel] != "v1" {
			t.Fatalf("%T %s/%s: owners %v, labels %v; want namespace %s, no owner, the validator's label",
				o, o.GetNamespace(), o.GetName(), o.GetOwnerReferences(), o.GetLabels(), ns)
		}
	}
	sts, ok := objs[0].(*appsv1.StatefulSet)
	if !ok {
		t.Fatalf("first object %T, want the StatefulSet", objs[0])
	}
	c := sts.Spec.Template.Spec.Containers[0]
	wantSecret := "secret:" + workload.ChartDatabaseSecret + "/" + workload.ChartDatabaseSecretKey
	for name, want := range map[string]string{
		"POSTGRES_USER": f.Bootstrap.User, "POSTGRES_DB": f.Bootstrap.Database, "POSTGRES_PASSWORD": wantSecret,
	} {
		if got := envValue(c, name); got != want {
			t.Errorf("%s = %q, want %q (%s)", name, got, want, f.Bootstrap.Source)
		}
	}
	facts := loadChartFacts(t)
	if !slices.ContainsFunc(facts.Secrets, func(s chartSecretFact) bool {
		return s.Name == workload.ChartDatabaseSecret && s.Keys[0].Key == workload.ChartDatabaseSecretKey
	}) {
		t.Errorf("the database's Secret %s is not one the charts read", wantSecret)
	}

	p := workload.ChartDatabase(v)
	svc := objs[1].(*corev1.Service)
	migration := fmt.Sprint(v.Spec.Migration.ID)
	for what, got := range map[string][2]string{
		"host (the Service)":   {p.Host, svc.Name},
		"port":                 {fmt.Sprint(p.Port), f.Port.String()},
		"user":                 {p.User, f.Validator.User.String()},
		"participant user":     {p.User, f.Participant.User.String()},
		"participant database": {p.ParticipantDatabase, strings.ReplaceAll(f.Participant.Database.String(), "<migrationId>", migration)},
		"participant schema":   {p.ParticipantSchema, f.Participant.Schema.String()},
		"validator database":   {p.ValidatorDatabase, f.Validator.Database.String()},
		"validator schema":     {p.ValidatorSchema, f.Validator.Schema.String()},
		"secret":               {p.SecretName, workload.ChartDatabaseSecret},
		"init image":           {p.InitImage, f.InitImage.String()},
	} {
		if got[0] != got[1] {
			t.Errorf("persistence %s: %q, want %q", what, got[0], got[1])
		}
	}
	if !p.ChartInit || p.ParticipantInit != nil || p.ValidatorInit != nil {
		t.Errorf("internal database: ChartInit %t, init containers %v %v; want the charts' init steps", p.ChartInit, p.ParticipantInit, p.ValidatorInit)
	}
	if svc.Spec.Ports[0].Port != p.Port {
		t.Errorf("Service port %d, persistence port %d", svc.Spec.Ports[0].Port, p.Port)
	}

	ext := matrix()["external database"]
	if objs := workload.ChartPostgres(ext); len(objs) != 0 {
		t.Fatalf("external database: chart postgres %v, want none", objs)
	}
	p = workload.ChartDatabase(ext)
	if p.Host != "db.example.test" || p.Port != 6432 || p.User != "operator" || p.ChartInit || p.ParticipantInit == nil || p.ValidatorInit == nil {
		t.Fatalf("external database: %+v, want the operator's server and user, our init containers", p)
	}
	for _, c := range []*corev1.Container{p.ParticipantInit, p.ValidatorInit} {
		if got := envValue(*c, "PGPASSWORD"); got != wantSecret {
			t.Errorf("init container %s: password %q, want %q", c.Name, got, wantSecret)
		}
	}
}

// envValue is a variable of c as splicefacts.Resolve gives it.
func envValue(c corev1.Container, name string) string {
	v, _ := splicefacts.Resolve(c, name)
	return v
}

// TestChartDatabaseInitCreatesDatabases runs the init containers an
// external database gets in chart mode against a real PostgreSQL server
// (TEST_POSTGRES_DSN), as a user that is not a superuser: they create the
// participant's and the validator app's databases, and again without
// failing once they exist.
func TestChartDatabaseInitCreatesDatabases(t *testing.T) {
	dsn := os.Getenv("TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("TEST_POSTGRES_DSN is not set: PostgreSQL is not tested")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("no psql here: the init containers' script runs psql")
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The validator app's database has a fixed name: another make test on
	// the same PostgreSQL server runs this test too, so the two take turns
	// (a session advisory lock, released when its connection closes).
	turn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Close()
	if _, err := turn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext('TestChartDatabaseInitCreatesDatabases'))`); err != nil {
		t.Fatal(err)
	}
	user, password := fmt.Sprintf("chartinit_%d", time.Now().UnixNano()%1_000_000), "pw-init"
	v := matrix()["external database"]
	v.Spec.Migration.ID = 7
	v.Spec.Database.User = user
	p := workload.ChartDatabase(v)
	if p.User != user {
		t.Fatalf("user %q, want %q", p.User, user)
	}
	drop := func() {
		for _, db := range []string{p.ParticipantDatabase, p.ValidatorDatabase} {
			_, _ = admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS "`+db+`"`)
		}
		_, _ = admin.ExecContext(context.Background(), `DROP ROLE IF EXISTS "`+user+`"`)
	}
	drop()
	defer drop() // before the lock is released
	if _, err := admin.ExecContext(ctx, `CREATE ROLE "`+user+`" LOGIN CREATEDB PASSWORD '`+password+`'`); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for _, c := range []*corev1.Container{p.ParticipantInit, p.ValidatorInit} {
			// The container's environment, with the test server for the
			// operator's and the Secret's value for its reference.
			env := []string{"PATH=" + os.Getenv("PATH"), "PGHOST=" + u.Hostname(), "PGPORT=" + u.Port(), "PGPASSWORD=" + password, "PGSSLMODE=disable"}
			for _, e := range c.Env {
				if e.ValueFrom == nil && e.Name != "PGHOST" && e.Name != "PGPORT" {
					env = append(env, e.Name+"="+e.Value)
				}
			}
			cmd := exec.CommandContext(ctx, c.Command[0], c.Command[1:]...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("round %d, init container %s: %v\n%s", round, c.Name, err, out)
			}
		}
	}
	for _, db := range []string{p.ParticipantDatabase, p.ValidatorDatabase} {
		var owner string
		err := admin.QueryRowContext(ctx, `SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1`, db).Scan(&owner)
		if err != nil || owner != user {
			t.Errorf("database %s: owner %q (%v), want it created by %s", db, owner, err, user)
		}
	}
}
