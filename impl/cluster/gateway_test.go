package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The behaviour suite of the cluster gateway: every test runs against Kube
// over a real API server (envtest) when KUBEBUILDER_ASSETS is set.
func TestGateway(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{"apply creates the resource and its secrets", testApplyCreate},
		{"apply updates and keeps annotations, status and pruning schedule", testApplyUpdate},
		{"secrets are written only when given", testSecretsOnlyWhenGiven},
		{"delete removes everything and is idempotent", testDelete},
		{"check references names the failing field", testCheckReferences},
		{"validator state follows status", testValidatorState},
		{"disable-user-edit annotation", testDisableUserEdit},
		{"pruning schedule", testPruneSchedule},
		{"backup schedule", testBackupSchedule},
		{"backup schedule refusals", testBackupScheduleRefusals},
		{"backup schedule in chart mode", testBackupScheduleChartMode},
		{"in step reads the caches", testInStep},
		{"ping", testPing},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			if b.name == "kube (envtest)" {
				t.Log(backendReal)
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, b.open(t))
				})
			}
		})
	}
}

const (
	onboardingValue = "onboarding-value-3f9c1d"
	clientSecret    = "client-secret-value-8a7e2b"
	dbPassword      = "db-password-value-51c0aa"
)

func allSecrets() domain.ValidatorSecrets {
	return domain.ValidatorSecrets{OnboardingSecret: onboardingValue, LedgerAPIClientSecret: clientSecret, DatabasePassword: dbPassword}
}

// config is a validator's configuration as a row without a version marker
// holds it (version 0): the gateway writes it in the current stored format.
func config(name, tag string, extra map[string]any) map[string]any {
	c := map[string]any{
		"name":      name,
		"imageRepo": "ghcr.io/example/splice",
		"imageTag":  tag,
		"clusterConfig": map[string]any{
			"partyHint":         "acme-validator-1",
			"scanAddress":       "https://scan.example.com",
			"svSponsorAddress":  "https://sv.example.com",
			"defaultJvmOptions": "-Xmx2g",
			"migration":         map[string]any{"id": 3, "migrating": false},
			"extraDomains":      []any{map[string]any{"alias": "d1", "url": "https://d1.example.com"}},
			"topUp":             map[string]any{"enable": true, "targetThroughput": 20000, "minTopupInterval": "1m"},
		},
		"participant": map[string]any{"envVars": []any{}},
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func validator(t testing.TB, name string, cfg map[string]any) domain.Validator {
	t.Helper()
	spec, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return domain.Validator{Name: name, DatabaseStorage: "20Gi", MigrationID: 3, Spec: spec}
}

// stored is cfg as spec.config holds it: domain.ValidatorConfig in the
// current version.
func stored(t *testing.T, cfg map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := domain.DecodeValidatorConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = domain.EncodeValidatorConfig(c); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m["version"] != float64(domain.ValidatorConfigVersion) {
		t.Fatalf("stored config version: got %v, want %d", m["version"], domain.ValidatorConfigVersion)
	}
	apitest.DropEmptyLists(m)
	return m
}

func jsonEqual(t *testing.T, got, want any) bool {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	var gv, wv any
	_ = json.Unmarshal(g, &gv)
	_ = json.Unmarshal(w, &wv)
	return reflect.DeepEqual(gv, wv)
}

func mustApply(t *testing.T, e *env, v domain.Validator, s domain.ValidatorSecrets) {
	t.Helper()
	mustApplyPruned(t, e, v, nil, s)
}

func mustApplyPruned(t *testing.T, e *env, v domain.Validator, p *domain.PruneSchedule, s domain.ValidatorSecrets) {
	t.Helper()
	if err := e.gw.ApplyValidator(context.Background(), v, p, domain.WrittenSecrets{}); err != nil {
		t.Fatalf("ApplyValidator(%s): %v", v.Name, err)
	}
	if err := e.gw.WriteSecrets(context.Background(), v.Name, s); err != nil {
		t.Fatalf("WriteSecrets(%s): %v", v.Name, err)
	}
}

func mustResource(t *testing.T, e *env, name string) resourceView {
	t.Helper()
	r, ok := e.validator(t, name)
	if !ok {
		t.Fatalf("validator %q: got absent, want present", name)
	}
	return r
}

func checkLabels(t *testing.T, what string, got map[string]string, validator string) {
	t.Helper()
	if got[cluster.ManagedByLabel] != "validator-manager" || got[cluster.ValidatorLabel] != validator {
		t.Errorf("%s labels: got %v, want managed-by=validator-manager and validator=%s", what, got, validator)
	}
}

func secretRef(name, key string) map[string]any { return map[string]any{"name": name, "key": key} }

func testApplyCreate(t *testing.T, e *env) {
	ctx := context.Background()
	cfg := config("alpha", "0.4.1", nil)
	v := validator(t, "alpha", cfg)
	v.Migrating = true
	mustApply(t, e, v, allSecrets())

	r := mustResource(t, e, "alpha")
	checkLabels(t, "validator", r.Labels, "alpha")
	if !jsonEqual(t, r.Spec["config"], stored(t, cfg)) {
		t.Errorf("spec.config: got %v, want %v", r.Spec["config"], stored(t, cfg))
	}
	want := map[string]any{
		"config":           stored(t, cfg),
		"customAuth":       false,
		"externalDatabase": false,
		"databaseStorage":  "20Gi",
		"migration":        map[string]any{"id": 3, "migrating": true},
		"secrets": map[string]any{
			"onboarding":    secretRef("alpha-onboarding", "secret"),
			"ledgerApiAuth": secretRef("alpha-ledger-api-auth", "client-secret"),
			"database":      secretRef("alpha-database", "password"),
		},
	}
	if !jsonEqual(t, r.Spec, want) {
		t.Errorf("spec: got %v, want %v", r.Spec, want)
	}

	for _, s := range []struct{ name, key, value string }{
		{domain.OnboardingSecretName("alpha"), cluster.OnboardingSecretKey, onboardingValue},
		{domain.LedgerAPIAuthSecretName("alpha"), cluster.LedgerAPIAuthSecretKey, clientSecret},
		{domain.DatabaseSecretName("alpha"), cluster.DatabaseSecretKey, dbPassword},
	} {
		sv, ok := e.secret(t, s.name)
		if !ok {
			t.Errorf("secret %s: got absent, want present", s.name)
			continue
		}
		if !slices.Equal(sv.Keys, []string{s.key}) {
			t.Errorf("secret %s keys: got %v, want [%s]", s.name, sv.Keys, s.key)
		}
		if sv.Data[s.key] != s.value {
			t.Errorf("secret %s: got another value, want the one given", s.name)
		}
		if sv.Type != "Opaque" {
			t.Errorf("secret %s type: got %q, want Opaque", s.name, sv.Type)
		}
		checkLabels(t, "secret "+s.name, sv.Labels, "alpha")
		if len(sv.Owners) != 1 || sv.Owners[0].Kind != "Validator" || sv.Owners[0].Name != "alpha" ||
			sv.Owners[0].APIVersion != "validator-manager.io/v1alpha1" || string(sv.Owners[0].UID) != r.UID || r.UID == "" {
			t.Errorf("secret %s owners: got %+v, want the Validator alpha (uid %q)", s.name, sv.Owners, r.UID)
		}
	}
	checkNoSecretValues(t, e)

	st, err := e.gw.ValidatorState(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if st != (domain.ValidatorState{Phase: domain.PhasePending}) {
		t.Errorf("state of a new validator: got %+v, want PENDING, database not running, editable", st)
	}
	// Applying the same validator again changes nothing.
	mustApply(t, e, v, domain.ValidatorSecrets{})
	if r2 := mustResource(t, e, "alpha"); !jsonEqual(t, r2.Spec, want) {
		t.Errorf("spec after a second apply: got %v, want %v", r2.Spec, want)
	}
}

// checkNoSecretValues: secret values live in Secret data only.
func checkNoSecretValues(t *testing.T, e *env) {
	t.Helper()
	dump := e.dump(t)
	for _, v := range []string{onboardingValue, clientSecret, dbPassword, "rotated-value"} {
		if strings.Contains(dump, v) {
			t.Errorf("a secret value appears outside Secret data: %s", dump)
		}
	}
}

func testApplyUpdate(t *testing.T, e *env) {
	ctx := context.Background()
	prune := &domain.PruneSchedule{Cron: "0 /10 * * * ?", MaxDurationText: "5m", RetentionText: "48h"}
	mustApplyPruned(t, e, validator(t, "beta", config("beta", "0.4.1", nil)), prune, allSecrets())
	e.setDisableUserEdit(t, "beta", true)
	e.setPhase(t, "beta", domain.PhaseRunning, true)
	before, _ := e.secret(t, domain.OnboardingSecretName("beta"))

	cfg := config("beta", "0.5.0", map[string]any{"customAuth": true})
	v := validator(t, "beta", cfg)
	v.CustomAuth, v.MigrationID, v.Migrating, v.DatabaseStorage = true, 4, true, ""
	mustApplyPruned(t, e, v, prune, domain.ValidatorSecrets{})

	r := mustResource(t, e, "beta")
	if r.Annotations[domain.DisableUserEditAnnotation] != "true" {
		t.Errorf("annotations after update: got %v, want %s kept", r.Annotations, domain.DisableUserEditAnnotation)
	}
	want := map[string]any{
		"config":           stored(t, cfg),
		"customAuth":       true,
		"externalDatabase": false,
		"migration":        map[string]any{"id": 4, "migrating": true},
		"secrets": map[string]any{
			"onboarding":    secretRef("beta-onboarding", "secret"),
			"ledgerApiAuth": secretRef("beta-ledger-api-auth", "client-secret"),
			"database":      secretRef("beta-database", "password"),
		},
		"participantPruningSchedule": map[string]any{"cron": "0 /10 * * * ?", "maxDuration": "5m", "retention": "48h"},
	}
	if !jsonEqual(t, r.Spec, want) {
		t.Errorf("spec after update: got %v, want %v", r.Spec, want)
	}
	st, err := e.gw.ValidatorState(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if want := (domain.ValidatorState{Phase: domain.PhaseRunning, DatabaseRunning: true, DisableUserEdit: true}); st != want {
		t.Errorf("state after update: got %+v, want %+v (status kept)", st, want)
	}
	after, _ := e.secret(t, domain.OnboardingSecretName("beta"))
	if after.Data[cluster.OnboardingSecretKey] != onboardingValue || after.Version != before.Version {
		t.Errorf("onboarding secret after an edit without secrets: rewritten (version %s → %s), want untouched", before.Version, after.Version)
	}
	checkNoSecretValues(t, e)
}

func testSecretsOnlyWhenGiven(t *testing.T, e *env) {
	spec := func(t *testing.T) map[string]any {
		t.Helper()
		s, _ := mustResource(t, e, "gamma").Spec["secrets"].(map[string]any)
		return s
	}
	v := validator(t, "gamma", config("gamma", "0.4.1", nil))
	mustApply(t, e, v, domain.ValidatorSecrets{OnboardingSecret: onboardingValue})
	if _, ok := e.secret(t, "gamma-onboarding"); !ok {
		t.Error("onboarding secret: got absent, want written")
	}
	for _, name := range []string{"gamma-ledger-api-auth", "gamma-database"} {
		if _, ok := e.secret(t, name); ok {
			t.Errorf("secret %s: got present, want absent (no value given)", name)
		}
	}
	if got, want := spec(t), map[string]any{"onboarding": secretRef("gamma-onboarding", "secret")}; !jsonEqual(t, got, want) {
		t.Errorf("spec.secrets: got %v, want %v", got, want)
	}

	// A database Secret an operator created counts; the onboarding one is kept.
	e.addSecret(t, "gamma-database", map[string]string{"password": dbPassword})
	within(t, func() error { // the gateway reads which Secrets exist from its cache
		if !e.gw.CachedSecrets("gamma").Database {
			return fmt.Errorf("the cache does not show gamma-database yet")
		}
		return nil
	})
	mustApply(t, e, v, domain.ValidatorSecrets{LedgerAPIClientSecret: clientSecret})
	want := map[string]any{
		"onboarding":    secretRef("gamma-onboarding", "secret"),
		"ledgerApiAuth": secretRef("gamma-ledger-api-auth", "client-secret"),
		"database":      secretRef("gamma-database", "password"),
	}
	if got := spec(t); !jsonEqual(t, got, want) {
		t.Errorf("spec.secrets: got %v, want %v", got, want)
	}
	if s, _ := e.secret(t, "gamma-onboarding"); s.Data["secret"] != onboardingValue {
		t.Error("onboarding secret: changed by an edit that did not give it")
	}

	// A new value replaces the old one.
	mustApply(t, e, v, domain.ValidatorSecrets{OnboardingSecret: "rotated-value"})
	if s, _ := e.secret(t, "gamma-onboarding"); s.Data["secret"] != "rotated-value" || len(s.Data) != 1 {
		t.Errorf("onboarding secret after rotation: got keys %v, want only the new value under secret", s.Keys)
	}
	{
		if s, _ := e.secret(t, "gamma-database"); s.Data["password"] != dbPassword || len(s.Owners) != 0 {
			t.Errorf("operator's database secret: got %d owners, want untouched", len(s.Owners))
		}
	}
	// Secrets stay out of the resource (rotated-value included).
	checkNoSecretValues(t, e)
}

func testDelete(t *testing.T, e *env) {
	ctx := context.Background()
	mustApply(t, e, validator(t, "delta", config("delta", "0.4.1", nil)), allSecrets())
	if err := e.gw.ApplyBackupSchedule(ctx, "delta", &domain.BackupSchedule{Validator: "delta", Cron: "0 3 * * *", MaxBackups: 3}); err != nil {
		t.Fatal(err)
	}
	if err := e.gw.DeleteValidator(ctx, "delta"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.validator(t, "delta"); ok {
		t.Error("validator after delete: got present, want absent")
	}
	for _, name := range []string{"delta-onboarding", "delta-ledger-api-auth", "delta-database"} {
		if _, ok := e.secret(t, name); ok {
			t.Errorf("secret %s after delete: got present, want absent", name)
		}
	}
	if _, ok := e.cronJob(t, "delta-backup"); ok {
		t.Error("backup cron job after delete: got present, want absent")
	}
	if _, ok := e.pvc(t, "delta-backups"); !ok {
		t.Error("backup volume after delete: got absent, want kept (backups outlive the validator)")
	}
	if _, err := e.gw.ValidatorState(ctx, "delta"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("state after delete: got %v, want ErrNotFound", err)
	}
	if err := e.gw.DeleteValidator(ctx, "delta"); err != nil {
		t.Errorf("second delete: got %v, want nil", err)
	}
	if err := e.gw.DeleteValidator(ctx, "never-created"); err != nil {
		t.Errorf("delete of an absent validator: got %v, want nil", err)
	}
	eventually(t, "ValidatorStates after delete", func() (bool, string) {
		s, err := apitest.ValidatorStates(e.gw)
		_, present := s["delta"]
		return err == nil && !present, fmt.Sprintf("%v, %v", s, err)
	})
}

func testCheckReferences(t *testing.T, e *env) {
	ctx := context.Background()
	e.addSecret(t, "pull-secret", map[string]string{".dockerconfigjson": "{}"})
	e.addSecret(t, "app-env", map[string]string{"token": "x"})
	fast := e.uniq("fast")
	e.addStorageClass(t, fast)

	ok := domain.References{
		Secrets: []domain.Reference{{Field: "participant.resources.imagePullSecret", Name: "pull-secret"}},
		SecretKeys: []domain.SecretKeyReference{
			{Field: "envVars[0].valueFrom.secretKeyRef", Name: "app-env", Key: "token"},
			{Field: "envVars[1].valueFrom.secretKeyRef", Name: "app-env", Key: "absent", Optional: true},
			{Field: "envVars[2].valueFrom.secretKeyRef", Name: "no-such-secret", Key: "k", Optional: true},
		},
		StorageClasses: []domain.Reference{{Field: "clusterConfig.pvcVolumeStorageClass", Name: fast}},
	}
	if err := e.gw.CheckReferences(ctx, ok); err != nil {
		t.Fatalf("references that exist: got %v, want nil", err)
	}
	if err := e.gw.CheckReferences(ctx, domain.References{}); err != nil {
		t.Fatalf("no references: got %v, want nil", err)
	}

	tests := []struct {
		name    string
		refs    domain.References
		field   string
		message string
	}{
		{"missing secret", domain.References{Secrets: []domain.Reference{
			{Field: "clusterConfig.participantIdentitiesDumpImport.identitiesSecretName", Name: "identities"}}},
			"clusterConfig.participantIdentitiesDumpImport.identitiesSecretName", `secret "identities" does not exist in namespace`},
		{"missing key", domain.References{SecretKeys: []domain.SecretKeyReference{
			{Field: "envVars[0].valueFrom.secretKeyRef", Name: "app-env", Key: "password"}}},
			"envVars[0].valueFrom.secretKeyRef", `secret "app-env" has no key "password"`},
		{"missing secret of a key", domain.References{SecretKeys: []domain.SecretKeyReference{
			{Field: "participant.envVars[3].valueFrom.secretKeyRef", Name: "gone", Key: "k"}}},
			"participant.envVars[3].valueFrom.secretKeyRef", `secret "gone" does not exist in namespace`},
		{"missing storage class", domain.References{StorageClasses: []domain.Reference{
			{Field: "clusterConfig.pvcVolumeStorageClass", Name: "slow"}}},
			"clusterConfig.pvcVolumeStorageClass", `storage class "slow" does not exist`},
		{"first failure wins", domain.References{
			Secrets:        []domain.Reference{{Field: "a", Name: "pull-secret"}, {Field: "b", Name: "nope"}},
			StorageClasses: []domain.Reference{{Field: "c", Name: "slow"}}},
			"b", `secret "nope"`},
	}
	for _, tc := range tests {
		err := e.gw.CheckReferences(ctx, tc.refs)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalid {
			t.Errorf("%s: got %v, want domain.Invalid", tc.name, err)
			continue
		}
		if de.Field != tc.field || !strings.Contains(de.Message, tc.message) {
			t.Errorf("%s: got field %q message %q, want field %q message containing %q", tc.name, de.Field, de.Message, tc.field, tc.message)
		}
	}
}

func testValidatorState(t *testing.T, e *env) {
	ctx := context.Background()
	if _, err := e.gw.ValidatorState(ctx, "nobody"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("state of an absent validator: got %v, want ErrNotFound", err)
	}
	internal := validator(t, "internal", config("internal", "0.4.1", nil))
	external := validator(t, "external", config("external", "0.4.1", map[string]any{"databaseConfig": map[string]any{"external": true}}))
	external.ExternalDatabase = true
	mustApply(t, e, internal, domain.ValidatorSecrets{})
	mustApply(t, e, external, domain.ValidatorSecrets{})

	states := func(want map[string]domain.ValidatorState) {
		t.Helper()
		for name, w := range want {
			got, err := e.gw.ValidatorState(ctx, name)
			if err != nil || got != w {
				t.Errorf("ValidatorState(%s): got %+v, %v, want %+v", name, got, err, w)
			}
		}
		eventually(t, "ValidatorStates", func() (bool, string) {
			all, err := apitest.ValidatorStates(e.gw)
			if err != nil {
				return false, err.Error()
			}
			for name, w := range want {
				if all[name] != w {
					return false, fmt.Sprintf("%v", all)
				}
			}
			return true, ""
		})
	}
	states(map[string]domain.ValidatorState{
		"internal": {Phase: domain.PhasePending},
		"external": {Phase: domain.PhasePending},
	})
	e.setPhase(t, "internal", domain.PhaseRunning, true)
	e.setPhase(t, "external", domain.PhaseRunning, true)
	states(map[string]domain.ValidatorState{
		"internal": {Phase: domain.PhaseRunning, DatabaseRunning: true},
		"external": {Phase: domain.PhaseRunning}, // an external database is not ours to run
	})
	e.setPhase(t, "internal", domain.PhaseCompleted, true)
	e.setPhase(t, "external", domain.PhaseCompleted, true)
	states(map[string]domain.ValidatorState{
		"internal": {Phase: domain.PhaseCompleted, DatabaseRunning: true},
		"external": {Phase: domain.PhaseCompleted},
	})
	{
		// The reconciler reports the database down while the validator runs.
		e.setPhase(t, "internal", domain.PhaseRunning, false)
		states(map[string]domain.ValidatorState{"internal": {Phase: domain.PhaseRunning}})
	}
}

func testDisableUserEdit(t *testing.T, e *env) {
	ctx := context.Background()
	mustApply(t, e, validator(t, "frozen", config("frozen", "0.4.1", nil)), domain.ValidatorSecrets{})
	check := func(want bool) {
		t.Helper()
		st, err := e.gw.ValidatorState(ctx, "frozen")
		if err != nil || st.DisableUserEdit != want {
			t.Errorf("ValidatorState DisableUserEdit: got %v, %v, want %v", st.DisableUserEdit, err, want)
		}
		eventually(t, "ValidatorStates DisableUserEdit", func() (bool, string) {
			all, err := apitest.ValidatorStates(e.gw)
			return err == nil && all["frozen"].DisableUserEdit == want, fmt.Sprintf("%v, %v", all, err)
		})
	}
	check(false)
	e.setDisableUserEdit(t, "frozen", true)
	check(true)
	mustApply(t, e, validator(t, "frozen", config("frozen", "0.4.2", nil)), domain.ValidatorSecrets{})
	check(true)
	e.setDisableUserEdit(t, "frozen", false)
	check(false)
}

func testPruneSchedule(t *testing.T, e *env) {
	ctx := context.Background()
	v := validator(t, "eps", config("eps", "0.4.1", nil))
	schedule := func() any { return mustResource(t, e, "eps").Spec["participantPruningSchedule"] }
	apply := func(p *domain.PruneSchedule) {
		t.Helper()
		if err := e.gw.ApplyValidator(ctx, v, p, domain.WrittenSecrets{}); err != nil {
			t.Fatal(err)
		}
	}

	apply(&domain.PruneSchedule{Validator: "eps", Cron: "0 /10 * * * ?", MaxDurationText: "5m", RetentionText: "48h"})
	if got, want := schedule(), map[string]any{"cron": "0 /10 * * * ?", "maxDuration": "5m", "retention": "48h"}; !jsonEqual(t, got, want) {
		t.Errorf("schedule: got %v, want %v", got, want)
	}
	apply(&domain.PruneSchedule{Validator: "eps", Cron: "0 0 8 ? * SAT", MaxDurationText: "1h", RetentionText: "30d"})
	if got, want := schedule(), map[string]any{"cron": "0 0 8 ? * SAT", "maxDuration": "1h", "retention": "30d"}; !jsonEqual(t, got, want) {
		t.Errorf("replaced schedule: got %v, want %v", got, want)
	}
	apply(nil)
	if got := schedule(); got != nil {
		t.Errorf("cleared schedule: got %v, want absent", got)
	}
	apply(nil)
	if got := schedule(); got != nil {
		t.Errorf("cleared again: got %v, want absent", got)
	}
}

func testBackupSchedule(t *testing.T, e *env) {
	ctx := context.Background()
	class := e.uniq("backup-class")
	e.addStorageClass(t, class)
	cfg := config("zeta", "0.4.1", map[string]any{"databaseConfig": map[string]any{"username": "cnadmin"}})
	cfg["clusterConfig"].(map[string]any)["pvcVolumeStorageClass"] = class
	mustApply(t, e, validator(t, "zeta", cfg), allSecrets())
	r := mustResource(t, e, "zeta")
	if r.Spec["storageClass"] != class || !jsonEqual(t, r.Spec["database"], map[string]any{"user": "cnadmin"}) {
		t.Errorf("spec storageClass %v database %v: want %s and user cnadmin", r.Spec["storageClass"], r.Spec["database"], class)
	}

	apply := func(b domain.BackupSchedule) cronJobView {
		t.Helper()
		b.Validator = "zeta"
		if err := e.gw.ApplyBackupSchedule(ctx, "zeta", &b); err != nil {
			t.Fatalf("ApplyBackupSchedule(%+v): %v", b, err)
		}
		c, ok := e.cronJob(t, "zeta-backup")
		if !ok {
			t.Fatal("backup cron job: got absent, want present")
		}
		return c
	}
	c := apply(domain.BackupSchedule{Cron: "0 3 * * *", MaxBackups: 7})
	if c.Schedule != "0 3 * * *" || c.Suspend || c.TimeZone != "Etc/UTC" || c.MaxBackups != "7" || c.ClaimName != "zeta-backups" {
		t.Errorf("cron job: got %+v, want schedule 0 3 * * *, active, Etc/UTC, 7 backups, volume zeta-backups", c)
	}
	{
		checkLabels(t, "cron job", c.Labels, "zeta")
		if len(c.Owners) != 1 || c.Owners[0].Kind != "Validator" || c.Owners[0].Name != "zeta" || string(c.Owners[0].UID) != r.UID {
			t.Errorf("cron job owners: got %+v, want the Validator zeta", c.Owners)
		}
		if c.Concurrency != "Forbid" || c.Image != cluster.DefaultBackupImage || c.MountPath != "/backups" {
			t.Errorf("cron job: got concurrency %s image %s mount %s, want Forbid, %s, /backups", c.Concurrency, c.Image, c.MountPath, cluster.DefaultBackupImage)
		}
		if !slices.Equal(c.Command, []string{"/bin/sh", "-c", cluster.BackupScript}) {
			t.Errorf("cron job command: got %q, want sh -c BackupScript", c.Command)
		}
		wantEnv := map[string]string{
			"BACKUP_DIR": "/backups", "MAX_BACKUPS": "7", "PGHOST": "zeta-postgres", "PGPORT": "5432",
			"PGUSER": "cnadmin", "PGPASSWORD": "secret:zeta-database/password",
		}
		if !reflect.DeepEqual(c.Env, wantEnv) {
			t.Errorf("cron job env: got %v, want %v", c.Env, wantEnv)
		}
	}
	pvc, ok := e.pvc(t, "zeta-backups")
	if !ok {
		t.Fatal("backup volume: got absent, want created")
	}
	if pvc.StorageClass != class || pvc.Size != cluster.DefaultBackupStorage || len(pvc.Owners) != 0 {
		t.Errorf("backup volume: got %+v, want class %s, size %s, no owner", pvc, class, cluster.DefaultBackupStorage)
	}
	{
		checkLabels(t, "backup volume", pvc.Labels, "zeta")
	}

	c = apply(domain.BackupSchedule{Cron: "30 1 * * 0", MaxBackups: 3})
	if c.Schedule != "30 1 * * 0" || c.MaxBackups != "3" || c.Suspend {
		t.Errorf("updated cron job: got %+v, want 30 1 * * 0, 3 backups, active", c)
	}
	c = apply(domain.BackupSchedule{Cron: "30 1 * * 0", MaxBackups: 3, Deleted: true})
	if !c.Suspend || c.Schedule != "30 1 * * 0" {
		t.Errorf("soft-deleted cron job: got %+v, want suspended with its schedule", c)
	}
	c = apply(domain.BackupSchedule{Cron: "0 4 * * *", MaxBackups: 5})
	if c.Suspend || c.Schedule != "0 4 * * *" || c.MaxBackups != "5" {
		t.Errorf("reactivated cron job: got %+v, want active 0 4 * * *, 5 backups", c)
	}
	checkNoSecretValues(t, e)
}

// testBackupScheduleChartMode: once the workloads run in a release's
// namespace (status.namespace, chart mode), the backup Job, which stays
// beside the Validator with its volume and the database Secret, dials the
// database's Service there as the charts' user; back in the Validator's
// namespace, as before.
func testBackupScheduleChartMode(t *testing.T, e *env) {
	ctx := context.Background()
	mustApply(t, e, validator(t, "kappa", config("kappa", "0.7.3", nil)), allSecrets())
	apply := func() cronJobView {
		t.Helper()
		if err := e.gw.ApplyBackupSchedule(ctx, "kappa", &domain.BackupSchedule{Validator: "kappa", Cron: "0 3 * * *", MaxBackups: 2}); err != nil {
			t.Fatal(err)
		}
		c, ok := e.cronJob(t, "kappa-backup")
		if !ok {
			t.Fatal("backup cron job: got absent, want present")
		}
		return c
	}
	for _, tc := range []struct{ namespace, host, user string }{
		{"", "kappa-postgres", "postgres"},
		{"release-kappa", "kappa-postgres.release-kappa", domain.ChartDatabaseUser},
		{e.namespace, "kappa-postgres", "postgres"},
	} {
		e.setWorkloadNamespace(t, "kappa", tc.namespace)
		c := apply()
		if c.Env["PGHOST"] != tc.host || c.Env["PGUSER"] != tc.user || c.Env["PGPASSWORD"] != "secret:kappa-database/password" || c.ClaimName != "kappa-backups" {
			t.Errorf("workloads in %q: cron job env %v, volume %s; want host %s, user %s, the database Secret, kappa-backups",
				tc.namespace, c.Env, c.ClaimName, tc.host, tc.user)
		}
	}
}

func testBackupScheduleRefusals(t *testing.T, e *env) {
	ctx := context.Background()
	err := e.gw.ApplyBackupSchedule(ctx, "ghost", &domain.BackupSchedule{Validator: "ghost", Cron: "0 3 * * *", MaxBackups: 3})
	if !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("absent validator: got %v, want ErrNotFound", err)
	}
	mustApply(t, e, validator(t, "eta", config("eta", "0.4.1", nil)), domain.ValidatorSecrets{})
	ext := validator(t, "theta", config("theta", "0.4.1", nil))
	ext.ExternalDatabase = true
	mustApply(t, e, ext, domain.ValidatorSecrets{})
	for _, tc := range []struct {
		b     domain.BackupSchedule
		code  domain.Code
		field string
	}{
		{domain.BackupSchedule{Validator: "eta", Cron: "every day", MaxBackups: 3}, domain.CodeInvalid, "cron"},
		{domain.BackupSchedule{Validator: "eta", Cron: "0 0 3 * * *", MaxBackups: 3}, domain.CodeInvalid, "cron"},
		{domain.BackupSchedule{Validator: "eta", Cron: "CRON_TZ=Europe/Zurich 0 3 * * *", MaxBackups: 3}, domain.CodeInvalid, "cron"},
		{domain.BackupSchedule{Validator: "eta", Cron: "0 3 * * *", MaxBackups: 0}, domain.CodeInvalid, "maxBackups"},
		// The validator's state forbids it; no request field is at fault.
		{domain.BackupSchedule{Validator: "theta", Cron: "0 3 * * *", MaxBackups: 3}, domain.CodeConflict, ""},
	} {
		err := e.gw.ApplyBackupSchedule(ctx, tc.b.Validator, &tc.b)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != tc.code || de.Field != tc.field {
			t.Errorf("%+v: got %v, want code %d on field %q", tc.b, err, tc.code, tc.field)
		}
	}
	for _, name := range []string{"eta-backup", "theta-backup"} {
		if _, ok := e.cronJob(t, name); ok {
			t.Errorf("cron job %s: got present after a refusal, want absent", name)
		}
	}
}

func testPing(t *testing.T, e *env) {
	if err := e.gw.Ping(context.Background()); err != nil {
		t.Errorf("Ping: got %v, want nil", err)
	}
}

// testInStep: InStep tells from the cache whether the cluster runs an
// intent: the resource's spec and labels, the backup CronJob's spec, labels
// and owner.
func testInStep(t *testing.T, e *env) {
	ctx := context.Background()
	cfg := config("iota", "0.4.1", map[string]any{"databaseConfig": map[string]any{"username": "cnadmin"}})
	v := validator(t, "iota", cfg)
	prune := &domain.PruneSchedule{Cron: "0 0 20 * * ?", MaxDurationText: "5m", RetentionText: "48h"}
	backup := &domain.BackupSchedule{Validator: "iota", Cron: "0 3 * * *", MaxBackups: 7}
	in := domain.ValidatorIntent{Validator: v, Prune: prune, Backup: backup}
	if e.gw.InStep(in) {
		t.Error("before any write: got in step, want not")
	}
	mustApplyPruned(t, e, v, prune, domain.ValidatorSecrets{})
	if err := e.gw.ApplyBackupSchedule(ctx, "iota", backup); err != nil {
		t.Fatal(err)
	}
	inStep := func(in domain.ValidatorIntent, want bool) func() error {
		return func() error {
			if got := e.gw.InStep(in); got != want {
				return fmt.Errorf("InStep(%+v): got %v, want %v", in, got, want)
			}
			return nil
		}
	}
	within(t, inStep(in, true))
	newer := validator(t, "iota", config("iota", "0.5.0", map[string]any{"databaseConfig": map[string]any{"username": "cnadmin"}}))
	otherUser := validator(t, "iota", config("iota", "0.4.1", map[string]any{"databaseConfig": map[string]any{"username": "other"}}))
	for name, other := range map[string]domain.ValidatorIntent{
		"another image tag":         {Validator: newer, Prune: prune, Backup: backup},
		"another database user":     {Validator: otherUser, Prune: prune, Backup: backup},
		"no pruning schedule":       {Validator: v, Backup: backup},
		"another backup schedule":   {Validator: v, Prune: prune, Backup: &domain.BackupSchedule{Validator: "iota", Cron: "0 4 * * *", MaxBackups: 7}},
		"a suspended backup":        {Validator: v, Prune: prune, Backup: &domain.BackupSchedule{Validator: "iota", Cron: "0 3 * * *", MaxBackups: 7, Deleted: true}},
		"no backup schedule":        {Validator: v, Prune: prune},
		"a validator never written": {Validator: validator(t, "kappa", config("kappa", "0.4.1", nil))},
	} {
		if e.gw.InStep(other) {
			t.Errorf("%s: got in step, want not", name)
		}
	}
	// An operator's annotation is not part of the intent.
	e.setDisableUserEdit(t, "iota", true)
	within(t, func() error {
		states, err := apitest.ValidatorStates(e.gw)
		if err != nil || !states["iota"].DisableUserEdit {
			return fmt.Errorf("state after the annotation: got %+v %v, want disableUserEdit", states["iota"], err)
		}
		return nil
	})
	within(t, inStep(in, true))

	if err := e.gw.ApplyBackupSchedule(ctx, "iota", nil); err != nil {
		t.Fatal(err)
	}
	within(t, inStep(domain.ValidatorIntent{Validator: v, Prune: prune}, true))
	within(t, inStep(in, false))
}

// TestRestartWritesNothing: a gateway that starts over a cluster already in
// step with what it would apply (a restart with nothing changed) sends no
// write to the API server: the Validator, its Secrets (operator values
// given again are the exception: they are written as given) and its backup
// CronJob are compared with the cache first.
func TestRestartWritesNothing(t *testing.T) {
	if realServer == nil {
		t.Skip(backendFakes)
	}
	ctx := context.Background()
	ns := newNamespace(t, "r")
	v := validator(t, "omega", config("omega", "0.4.1", map[string]any{"databaseConfig": map[string]any{"username": "cnadmin"}}))
	prune := &domain.PruneSchedule{Cron: "0 0 20 * * ?", MaxDurationText: "5m", RetentionText: "48h"}
	backup := &domain.BackupSchedule{Validator: "omega", Cron: "0 3 * * *", MaxBackups: 7}
	password, clientSecret := "generated-password", "generated-client-secret"
	defaults := domain.SecretDefaults{DatabasePassword: &password, LedgerAPIClientSecret: &clientSecret}
	apply := func(k *cluster.Kube) {
		t.Helper()
		if err := k.ApplyValidator(ctx, v, prune, domain.WrittenSecrets{}); err != nil {
			t.Fatal(err)
		}
		if err := k.ApplyBackupSchedule(ctx, "omega", backup); err != nil {
			t.Fatal(err)
		}
		if err := k.DefaultSecrets(ctx, "omega", defaults); err != nil {
			t.Fatal(err)
		}
	}
	first, start, firstWrites := gatewayOn(t, realServer, ns, cluster.KubeOptions{})
	start()
	if err := first.ApplyValidator(ctx, v, prune, domain.WrittenSecrets{}); err != nil {
		t.Fatal(err)
	}
	if err := first.WriteSecrets(ctx, "omega", domain.ValidatorSecrets{OnboardingSecret: onboardingValue}); err != nil {
		t.Fatal(err)
	}
	apply(first)
	if firstWrites.Load() == 0 {
		t.Fatal("the first gateway wrote nothing")
	}
	in := domain.ValidatorIntent{Validator: v, Prune: prune, Backup: backup}
	within(t, func() error {
		if !first.InStep(in) || first.CachedSecrets("omega") != (domain.WrittenSecrets{Onboarding: true, LedgerAPIAuth: true, Database: true}) {
			return fmt.Errorf("the first gateway's cache is not in step yet")
		}
		return nil
	})
	// The restart: a new cache over the same namespace.
	second, start2, writes := gatewayOn(t, realServer, ns, cluster.KubeOptions{})
	start2()
	if !second.InStep(in) {
		t.Fatal("after the restart: InStep false, want true")
	}
	apply(second)
	if n := writes.Load(); n != 0 {
		t.Fatalf("a restart with nothing changed wrote %d times, want 0", n)
	}
	// Defaults never replace a value: the operator's password stays.
	if err := second.WriteSecrets(ctx, "omega", domain.ValidatorSecrets{DatabasePassword: dbPassword}); err != nil {
		t.Fatal(err)
	}
	other := "another-default"
	if err := second.DefaultSecrets(ctx, "omega", domain.SecretDefaults{DatabasePassword: &other}); err != nil {
		t.Fatal(err)
	}
	core, _ := realClients(t)
	s, err := core.CoreV1().Secrets(ns).Get(ctx, domain.DatabaseSecretName("omega"), metav1.GetOptions{})
	if err != nil || string(s.Data[cluster.DatabaseSecretKey]) != dbPassword {
		t.Fatalf("database Secret after a default: got %v, want the operator's password", err)
	}
}

// TestCreateWritesOnce: what the intent controller does for a new validator
// (its resource, then its Secrets given and defaulted) costs one apply of
// the resource, one of spec.secrets by the field owner that keeps them, and
// one per Secret, and no read: the Secrets' owner is the uid the resource's
// apply answered, though the cache has not seen the resource yet. The
// resource references its Secrets from its first generation, which is its
// only one: its workloads are made once.
func TestCreateWritesOnce(t *testing.T) {
	if realServer == nil {
		t.Skip(backendFakes)
	}
	ctx := context.Background()
	ns := newNamespace(t, "w")
	requests := map[string]int{}
	var mu sync.Mutex
	cfg := rest.CopyConfig(realServer)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			// The namespace's objects, not discovery; no watch.
			if r.URL.Query().Get("watch") != "true" && strings.Contains(r.URL.Path, "/namespaces/"+ns+"/") {
				mu.Lock()
				requests[r.Method]++
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	k, start, _ := gatewayOn(t, cfg, ns, cluster.KubeOptions{})
	start()
	mu.Lock()
	clear(requests) // the cache's lists
	mu.Unlock()
	v := validator(t, "kappa", config("kappa", "0.4.1", map[string]any{"databaseConfig": map[string]any{"username": "cnadmin"}}))
	if err := k.ApplyValidator(ctx, v, nil, domain.WrittenSecrets{Onboarding: true, LedgerAPIAuth: true, Database: true}); err != nil {
		t.Fatal(err)
	}
	secret := "generated-client-secret"
	if err := k.PutSecrets(ctx, "kappa", domain.ValidatorSecrets{OnboardingSecret: onboardingValue, DatabasePassword: dbPassword},
		domain.SecretDefaults{LedgerAPIClientSecret: &secret}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := maps.Clone(requests)
	mu.Unlock()
	if want := map[string]int{http.MethodPatch: 5}; !maps.Equal(got, want) {
		t.Errorf("requests by method: got %v, want %v (the resource, spec.secrets, three Secrets)", got, want)
	}
	core, dyn := realClients(t)
	u, err := dyn.Resource(cluster.ValidatorResource).Namespace(ns).Get(ctx, "kappa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u.GetGeneration() != 1 {
		t.Errorf("generation: got %d, want 1", u.GetGeneration())
	}
	refs, _, _ := unstructured.NestedMap(u.Object, "spec", "secrets")
	if len(refs) != 3 {
		t.Errorf("spec.secrets: got %v, want the three Secrets", refs)
	}
	// The next apply of the spec (an edit) leaves spec.secrets out; they stay.
	within(t, func() error {
		if !k.InStep(domain.ValidatorIntent{Validator: v}) {
			return fmt.Errorf("the cache does not show the resource yet")
		}
		return nil
	})
	v.DatabaseStorage = "30Gi"
	if err := k.ApplyValidator(ctx, v, nil, domain.WrittenSecrets{}); err != nil {
		t.Fatal(err)
	}
	if u, err = dyn.Resource(cluster.ValidatorResource).Namespace(ns).Get(ctx, "kappa", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if refs, _, _ := unstructured.NestedMap(u.Object, "spec", "secrets"); len(refs) != 3 || u.GetGeneration() != 2 {
		t.Errorf("after an edit: generation %d, spec.secrets %v; want 2 and the three Secrets", u.GetGeneration(), refs)
	}
	for _, name := range []string{domain.OnboardingSecretName("kappa"), domain.DatabaseSecretName("kappa"), domain.LedgerAPIAuthSecretName("kappa")} {
		s, err := core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != u.GetUID() {
			t.Errorf("Secret %s owners: got %v, want the resource (uid %s)", name, s.OwnerReferences, u.GetUID())
		}
	}
}

// TestEditAfterACrashedCreateKeepsSecretRefs: a process killed between a
// create's apply and secretRefsOwner's take-over of spec.secrets leaves
// the references to FieldOwner alone; the next process's first edit (whose
// apply leaves them out) must not drop them: one new generation, the
// references kept, and from then on secretRefsOwner's.
func TestEditAfterACrashedCreateKeepsSecretRefs(t *testing.T) {
	if realServer == nil {
		t.Skip(backendFakes)
	}
	ctx := context.Background()
	ns := newNamespace(t, "w")
	// The first process dies at the take-over: its request never arrives.
	crashed := rest.CopyConfig(realServer)
	crashed.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch && r.URL.Query().Get("fieldManager") == "validator-manager-secret-refs" {
				return nil, errors.New("killed")
			}
			return rt.RoundTrip(r)
		})
	})
	first, start, _ := gatewayOn(t, crashed, ns, cluster.KubeOptions{})
	start()
	v := validator(t, "lambda", config("lambda", "0.4.1", nil))
	if err := first.ApplyValidator(ctx, v, nil, domain.WrittenSecrets{Onboarding: true, LedgerAPIAuth: true, Database: true}); err == nil {
		t.Fatal("the take-over went through; the test needs it to fail")
	}
	_, dyn := realClients(t)
	refsAndGeneration := func() (map[string]any, int64) {
		t.Helper()
		u, err := dyn.Resource(cluster.ValidatorResource).Namespace(ns).Get(ctx, "lambda", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refs, _, _ := unstructured.NestedMap(u.Object, "spec", "secrets")
		return refs, u.GetGeneration()
	}
	if refs, gen := refsAndGeneration(); len(refs) != 3 || gen != 1 {
		t.Fatalf("after the crashed create: generation %d, spec.secrets %v; want 1 and the three Secrets", gen, refs)
	}
	// The next process edits the validator.
	next, start, _ := gatewayOn(t, realServer, ns, cluster.KubeOptions{})
	start()
	within(t, func() error {
		if _, ok := next.CachedState("lambda"); !ok {
			return fmt.Errorf("the cache does not show the resource yet")
		}
		return nil
	})
	v.DatabaseStorage = "30Gi"
	if err := next.ApplyValidator(ctx, v, nil, domain.WrittenSecrets{}); err != nil {
		t.Fatal(err)
	}
	if refs, gen := refsAndGeneration(); len(refs) != 3 || gen != 2 {
		t.Errorf("after the edit: generation %d, spec.secrets %v; want 2 and the three Secrets", gen, refs)
	}
	// The references are secretRefsOwner's now: a second edit keeps them too.
	v.DatabaseStorage = "40Gi"
	within(t, func() error {
		if next.InStep(domain.ValidatorIntent{Validator: v}) {
			return nil
		}
		if err := next.ApplyValidator(ctx, v, nil, domain.WrittenSecrets{}); err != nil {
			return err
		}
		if !next.InStep(domain.ValidatorIntent{Validator: v}) {
			return fmt.Errorf("the cache does not show the second edit yet")
		}
		return nil
	})
	if refs, gen := refsAndGeneration(); len(refs) != 3 || gen != 3 {
		t.Errorf("after a second edit: generation %d, spec.secrets %v; want 3 and the three Secrets", gen, refs)
	}
}

// TestDatabasePasswordEditKeepsPrevious: the database Secret carries its
// password's digest as a label, and an edit that changes the password
// keeps the one it replaced (what the running database accepts until the
// workload controller's rotation ran); writing the same password again
// keeps it too; an edit before the last one's rotation ran keeps the
// password the database still takes (the apps' template says which: the
// digest of the one a rotation set, or none when no rotation completed, so
// the database takes the password the Secret held before its first edit).
func TestDatabasePasswordEditKeepsPrevious(t *testing.T) {
	type step struct{ password, previous string }
	for _, tc := range []struct {
		name   string
		digest string // on the validator app's pod template
		steps  []step
	}{
		{"the database took second, never third", "second",
			[]step{{"first", ""}, {"second", "first"}, {"second", "first"}, {"third", "second"}, {"fourth", "second"}}},
		{"no rotation completed", "",
			[]step{{"first", ""}, {"second", "first"}, {"third", "first"}, {"third", "first"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, _ := realClients(t)
			ctx := context.Background()
			ns := newNamespace(t, "p")
			app := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "rho-validator-app", Namespace: ns},
				Spec: appsv1.DeploymentSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rho"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rho"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
					},
				},
			}
			if tc.digest != "" {
				app.Spec.Template.Annotations = map[string]string{cluster.DatabasePasswordAnnotation: cluster.PasswordDigest([]byte(tc.digest))}
			}
			if _, err := core.AppsV1().Deployments(ns).Create(ctx, app, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			gw, start, _ := gatewayOn(t, realServer, ns, cluster.KubeOptions{})
			start()
			v := validator(t, "rho", config("rho", "0.4.1", nil))
			if err := gw.ApplyValidator(ctx, v, nil, domain.WrittenSecrets{}); err != nil {
				t.Fatal(err)
			}
			for _, step := range tc.steps {
				within(t, func() error { // the cache shows what was written before, and the Deployment
					if step.previous != "" && !gw.CachedSecrets("rho").Database {
						return fmt.Errorf("the cache does not show the database Secret yet")
					}
					if !gw.CachedDeployment("rho-validator-app") {
						return fmt.Errorf("the cache does not show the validator app yet")
					}
					return nil
				})
				if err := gw.WriteSecrets(ctx, "rho", domain.ValidatorSecrets{DatabasePassword: step.password}); err != nil {
					t.Fatal(err)
				}
				s, err := core.CoreV1().Secrets(ns).Get(ctx, domain.DatabaseSecretName("rho"), metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := string(s.Data[cluster.PreviousDatabasePasswordKey]); got != step.previous || string(s.Data[cluster.DatabaseSecretKey]) != step.password ||
					s.Labels[cluster.DatabasePasswordLabel] != cluster.PasswordDigest([]byte(step.password)) {
					t.Fatalf("after writing %q: previous %q, labels %v; want previous %q and the digest of %q", step.password, got, s.Labels, step.previous, step.password)
				}
			}
		})
	}
}
