package charts

import (
	"encoding/json"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// The charts a validator is made of, and their release names, as Splice's
// documentation installs them.
const (
	ParticipantChart   = "splice-participant"
	ValidatorChart     = "splice-validator"
	ParticipantRelease = "participant"
	ValidatorRelease   = "validator"
)

// Values are the values of each chart for v, merged from, lowest first
// (deploy/README.md): validatorDefaults; server (splice.chartValues); what
// v's configuration sets; v's spec.chartValues; and the pinned values
// (identity, addresses, auth, database, Secrets), which the manager
// provisions and nothing overrides. Tables merge key by key; a null
// removes a chart default.
func Values(v *v1alpha1.Validator, server map[string]any) (map[string]map[string]any, error) {
	perValidator := map[string]any{}
	if v.Spec.ChartValues != nil && len(v.Spec.ChartValues.Raw) > 0 {
		if err := json.Unmarshal(v.Spec.ChartValues.Raw, &perValidator); err != nil {
			return nil, fmt.Errorf("spec.chartValues: %w", err)
		}
	}
	out := map[string]map[string]any{}
	for _, d := range []struct {
		chart                      string
		defaults, modelled, pinned map[string]any
	}{
		{ParticipantChart, nil, participantModelled(v), participantPinned(v)},
		{ValidatorChart, validatorDefaults, validatorModelled(v), validatorPinned(v)},
	} {
		own, err := table(perValidator, d.chart, "spec.chartValues")
		if err != nil {
			return nil, err
		}
		srv, err := table(server, d.chart, "splice.chartValues")
		if err != nil {
			return nil, err
		}
		merged := map[string]any{}
		for _, l := range []map[string]any{d.pinned, own, d.modelled, srv, d.defaults} { // highest first
			j, err := jsonValues(l)
			if err != nil {
				return nil, err
			}
			merged = chartutil.MergeTables(merged, j)
		}
		out[d.chart] = merged
	}
	return out, nil
}

// validatorDefaults are the built-in layout's where splice-validator has
// none: no top-up (0.7.3's schema requires topup when it is absent), and
// the UIs' names (the chart's null would leave them empty).
var validatorDefaults = func() map[string]any {
	names := map[string]any{}
	for _, n := range workload.InstanceNames {
		names[n.Key] = n.Value
	}
	return map[string]any{"topup": map[string]any{"enabled": false}, "spliceInstanceNames": names}
}()

// LoadValues reads the server's chart values (splice.chartValues), a YAML
// table per chart name; an empty path is none.
func LoadValues(path string) (map[string]any, error) {
	if path == "" {
		return nil, nil
	}
	vals, err := common.ReadValuesFile(path)
	if err != nil {
		return nil, fmt.Errorf("splice.chartValues: %w", err)
	}
	for _, chart := range []string{ParticipantChart, ValidatorChart} {
		if _, err := table(vals, chart, "splice.chartValues"); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// table is chart's table in m (what names m in errors).
func table(m map[string]any, chart, what string) (map[string]any, error) {
	t, ok := m[chart]
	if !ok || t == nil {
		return nil, nil
	}
	tm, ok := t.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s.%s: an object of the chart's values, not a %T", what, chart, t)
	}
	return tm, nil
}

// participantPinned: what splice-participant must be given.
func participantPinned(v *v1alpha1.Validator) map[string]any {
	auth := ptr.Deref(v.Spec.Config.Auth, v1alpha1.Auth{})
	db := workload.ChartDatabase(v)
	m := map[string]any{
		"persistence": persistence(db, db.ParticipantDatabase, db.ParticipantSchema),
		"auth": map[string]any{
			"jwksUrl":        ptr.Deref(auth.JWKSURL, ""),
			"targetAudience": auth.Audience,
		},
		"participantAdminUserNameFrom": map[string]any{"secretKeyRef": map[string]any{
			"name": workload.ChartLedgerAPIAuthSecret, "key": workload.ChartLedgerAPIUserKey, "optional": false,
		}},
	}
	if db.ParticipantInit != nil {
		m["extraInitContainers"] = []any{db.ParticipantInit}
		// splice-participant passes no user (its image's default is
		// ChartDatabaseUser); this pins its variables, the configuration's first.
		user := []corev1.EnvVar{{Name: "CANTON_PARTICIPANT_POSTGRES_USER", Value: db.User}}
		m["additionalEnvVars"] = workload.AppendEnv(workload.AppendEnv(nil, v.Spec.Config.Participant.EnvVars), user)
	}
	// imageRepo is the images' prefix; the tag is the chart's appVersion.
	setNonZero(m, "imageRepo", v.Spec.Config.ImageRepo)
	return m
}

// participantModelled: what v's configuration sets of splice-participant.
func participantModelled(v *v1alpha1.Validator) map[string]any {
	cfg := &v.Spec.Config
	m := map[string]any{"enableHealthProbes": workload.ParticipantProbes(v)}
	setNonZero(m, "defaultJvmOptions", workload.ParticipantJVMOptions(v))
	setPtr(m, "resources", cfg.Participant.Resources)
	if env := workload.AppendEnv(nil, cfg.Participant.EnvVars); len(env) > 0 {
		m["additionalEnvVars"] = env
	}
	return m
}

// validatorPinned: what splice-validator must be given.
func validatorPinned(v *v1alpha1.Validator) map[string]any {
	cfg := &v.Spec.Config
	c := &cfg.Cluster
	auth := ptr.Deref(v.Spec.Config.Auth, v1alpha1.Auth{})
	wallet := workload.WalletEnabled(v)
	db := workload.ChartDatabase(v)
	m := map[string]any{
		"nodeIdentifier":     workload.NodeIdentifier(v),
		"participantAddress": ParticipantRelease,
		"scanAddress":        c.ScanAddress,
		"migration":          map[string]any{"id": v.Spec.Migration.ID, "migrating": v.Spec.Migration.Migrating},
		"persistence":        persistence(db, db.ValidatorDatabase, db.ValidatorSchema),
		"auth":               map[string]any{"audience": auth.Audience, "jwksUrl": ptr.Deref(auth.JWKSURL, "")},
		"enableWallet":       wallet,
		"validatorWebUi":     map[string]any{"enabled": wallet},
		"ansWebUi":           map[string]any{"enabled": wallet},
	}
	setNonZero(m, "validatorWalletUser", workload.WalletUser(v))
	setNonZero(m, "validatorPartyHint", c.PartyHint)
	if c.SVSponsorAddress != "" {
		m["svSponsorAddress"] = c.SVSponsorAddress
		if v.Spec.Secrets != nil && v.Spec.Secrets.Onboarding != nil {
			m["onboardingSecretFrom"] = map[string]any{"secretKeyRef": map[string]any{
				"name": workload.ChartOnboardingSecret, "key": workload.ChartOnboardingSecretKey, "optional": false,
			}}
		}
	}
	if db.ValidatorInit != nil {
		m["extraInitContainers"] = []any{db.ValidatorInit}
	}
	setNonZero(m, "imageRepo", cfg.ImageRepo) // as for splice-participant
	return m
}

// validatorModelled: what v's configuration sets of splice-validator.
func validatorModelled(v *v1alpha1.Validator) map[string]any {
	cfg := &v.Spec.Config
	c := &cfg.Cluster
	m := map[string]any{}
	setNonZero(m, "defaultJvmOptions", c.DefaultJVMOptions)
	setPtr(m, "resources", c.ValidatorApp.Resources)
	if env := workload.AppendEnv(workload.AppendEnv(nil, c.ValidatorApp.EnvVars), ptr.Deref(cfg.EnvVars, nil)); len(env) > 0 {
		m["additionalEnvVars"] = env
	}
	if users := ptr.Deref(c.AdditionalUsersEnvVars, nil); len(users) > 0 {
		m["additionalUsers"] = users
	}
	setNonZero(m, "additionalConfig", ptr.Deref(c.AdditionalConfig, ""))
	if dars := ptr.Deref(c.AppDars, ""); dars != "" {
		m["appDars"] = appDars(dars)
	}
	setNonZero(m, "contactPoint", ptr.Deref(c.ContactPoint, ""))
	setPtr(m, "failOnAppVersionMismatch", c.FailOnAppVersionMismatch)
	setPtr(m, "svValidator", c.SVValidator)
	setPtr(m, "migrateValidatorParty", c.MigrateValidatorParty)
	if c.SequencersFromScan != nil {
		m["useSequencerConnectionsFromScan"] = *c.SequencersFromScan
		setNonZero(m, "decentralizedSynchronizerUrl", ptr.Deref(c.SynchronizerURL, ""))
	}
	if ds := ptr.Deref(c.ExtraSynchronizers, nil); len(ds) > 0 {
		extra := make([]map[string]any, 0, len(ds))
		for _, d := range ds {
			extra = append(extra, map[string]any{"alias": ptr.Deref(d.Alias, ""), "url": ptr.Deref(d.URL, "")})
		}
		m["extraDomains"] = extra
	}
	if t := c.TopUp; t != nil {
		topup := map[string]any{}
		setPtr(topup, "enabled", t.Enable)
		setPtr(topup, "targetThroughput", t.TargetThroughput)
		setPtr(topup, "minTopupInterval", t.MinTopupInterval)
		m["topup"] = topup
	}
	if len(cfg.WalletSweeps) > 0 {
		sweeps := map[string]any{}
		for _, w := range cfg.WalletSweeps {
			sweeps[w.SenderPartyID] = map[string]any{
				"maxBalanceUSD": w.MaxBalanceUSD, "minBalanceUSD": w.MinBalanceUSD,
				"receiver": w.ReceiverPartyID, "useTransferPreapproval": w.UseTransferPreapproval,
			}
		}
		m["walletSweep"] = sweeps
	}
	if p := v.Spec.ParticipantPruningSchedule; p != nil {
		m["participantPruningSchedule"] = map[string]any{"cron": p.Cron, "maxDuration": p.MaxDuration, "retention": p.Retention}
	}
	if imp := c.IdentitiesImport; imp != nil && imp.SecretName != "" {
		i := map[string]any{"secretName": imp.SecretName}
		setNonZero(i, "newParticipantIdentifier", imp.NewParticipantIdentifier)
		m["participantIdentitiesDumpImport"] = i
	}
	if b := c.IdentitiesBackup; b != nil {
		m["participantIdentitiesDumpPeriodicBackup"] = map[string]any{
			"backupInterval": b.Interval,
			"location": map[string]any{
				"prefix": b.Prefix,
				"bucket": map[string]any{"projectId": b.BucketProjectID, "bucketName": b.BucketName, "secretName": b.BucketSecretName},
			},
		}
	}
	setPtr(m, "metrics", c.Metrics) // the chart's keys: enable, interval, release
	if c.FixedTokens != nil {
		m["cluster"] = map[string]any{"fixedTokens": *c.FixedTokens}
	}
	if sc := v.Spec.StorageClass; sc != "" {
		m["pvc"] = map[string]any{"volumeStorageClass": sc}
	}
	return m
}

// persistence is a chart's persistence values.
func persistence(db workload.ChartPersistence, database, schema string) map[string]any {
	return map[string]any{
		"host":                  db.Host,
		"port":                  db.Port,
		"user":                  db.User,
		"databaseName":          database,
		"schema":                schema,
		"secretName":            db.SecretName,
		"initImageName":         db.InitImage,
		"enablePgInitContainer": db.ChartInit,
	}
}

// appDars is appDars (a JSON list of paths, or one path) as a list.
func appDars(s string) []string {
	var list []string
	if strings.HasPrefix(strings.TrimSpace(s), "[") && json.Unmarshal([]byte(s), &list) == nil {
		return list
	}
	return []string{s}
}

func setNonZero(m map[string]any, k, s string) {
	if s != "" {
		m[k] = s
	}
}

func setPtr[T any](m map[string]any, k string, p *T) {
	if p != nil {
		m[k] = *p
	}
}
