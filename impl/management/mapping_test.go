package management

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Fixtures of the stored format:
//   - stored-config-v0.json and stored-config-v0-minimal.json were written
//     by the code before the version marker (a storedSpec embedding the 1.11
//     ValidatorDto): rows and resources in the field hold this.
//   - stored-config-v1.json is what this server writes for fullConfig(); a
//     change of the stored format shows here first (go test -update rewrites
//     it; then raise domain.ValidatorConfigVersion if old servers would
//     misread the new form, and keep reading the old one).
const (
	goldenV0        = "testdata/stored-config-v0.json"
	goldenV0Minimal = "testdata/stored-config-v0-minimal.json"
	goldenV1        = "testdata/stored-config-v1.json"
)

// fullCreate is a create payload with every field set, secrets included.
func fullCreate() managementapi.ValidatorDto {
	var dto managementapi.ValidatorDto
	fill(&dto)
	return dto
}

// fullConfig is fullCreate as created, then given wallet sweeps and
// cleanRestoreData by an edit: every field of the stored format is set.
func fullConfig() domain.ValidatorConfig {
	dto := fullCreate()
	c := configFromCreate(dto)
	c.MarkWritten(splitSecrets(dto).Written())
	var sweeps []managementapi.WalletSweepDto
	fill(&sweeps)
	c.WalletSweeps = mapSlice(sweeps, toWalletSweep)
	c.CleanRestoreData = true
	return c
}

func toJSONObject(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, ok := v.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// diffJSON lists the paths where two decoded JSON values differ.
func diffJSON(path string, got, want any) []string {
	gm, gok := got.(map[string]any)
	wm, wok := want.(map[string]any)
	if gok && wok {
		var out []string
		keys := map[string]bool{}
		for k := range gm {
			keys[k] = true
		}
		for k := range wm {
			keys[k] = true
		}
		for k := range keys {
			out = append(out, diffJSON(path+"."+k, gm[k], wm[k])...)
		}
		sort.Strings(out)
		return out
	}
	if !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("%s: got %v, want %v", strings.TrimPrefix(path, "."), got, want)}
	}
	return nil
}

// TestCreateMappingKeepsEveryField: every field of the create payload but
// the secret values reaches the stored configuration, under the name it had
// in version 0 (whose layout version 1 keeps). A field the contract adds
// fails here until mapping.go maps it (or decides to drop it).
func TestCreateMappingKeepsEveryField(t *testing.T) {
	dto := fullCreate()
	want := toJSONObject(t, dto)
	delete(want, "onboardingSecret")
	delete(want, "sqlDbPassword")
	delete(want["auth"].(map[string]any), "ledgerApiClientSecret")
	delete(want["databaseConfig"].(map[string]any), "password")

	raw, err := domain.EncodeValidatorConfig(configFromCreate(dto))
	if err != nil {
		t.Fatal(err)
	}
	got := toJSONObject(t, raw)
	if got["version"] != float64(domain.ValidatorConfigVersion) {
		t.Errorf("version: got %v, want %d", got["version"], domain.ValidatorConfigVersion)
	}
	delete(got, "version")
	delete(got, "writtenSecrets")
	for _, d := range diffJSON("", got, want) {
		t.Errorf("stored configuration differs from the payload at %s", d)
	}
	for _, secret := range []string{"onboardingSecret", "auth.ledgerApiClientSecret", "databaseConfig.password", "sqlDbPassword"} {
		if bytes.Contains(raw, []byte(`"`+secret+`"`)) {
			t.Errorf("the stored configuration holds the secret value of %s", secret)
		}
	}
	if s := splitSecrets(dto); s.OnboardingSecret != "onboardingSecret" || s.LedgerAPIClientSecret != "auth.ledgerApiClientSecret" || s.DatabasePassword != "databaseConfig.password" {
		t.Errorf("splitSecrets: got %+v, want the three values of the payload", s)
	}
}

// TestStoredFormatGolden: the stored JSON of the full fixture is the golden
// file, byte for byte (indented for review).
func TestStoredFormatGolden(t *testing.T) {
	raw, err := domain.EncodeValidatorConfig(fullConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Indent(&got, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')
	if *update {
		if err := os.WriteFile(goldenV1, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenV1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("stored format of the fixture changed (go test -update rewrites %s):\n%s",
			goldenV1, strings.Join(diffJSON("", toJSONObject(t, got.Bytes()), toJSONObject(t, want)), "\n"))
	}
}

// TestVersion0RowsDecode: rows written before the version marker decode to
// the same configuration and are written back as version 1.
func TestVersion0RowsDecode(t *testing.T) {
	v0, err := os.ReadFile(goldenV0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := domain.DecodeValidatorConfig(v0)
	if err != nil {
		t.Fatalf("decode version 0: %v", err)
	}
	if got.Version != 0 {
		t.Errorf("version of a row without marker: got %d, want 0", got.Version)
	}
	got.Version = domain.ValidatorConfigVersion
	if want := fullConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("version 0 row decoded differently:\n%s", strings.Join(diffJSON("", toJSONObject(t, got), toJSONObject(t, want)), "\n"))
	}

	minimal, err := os.ReadFile(goldenV0Minimal)
	if err != nil {
		t.Fatal(err)
	}
	c, err := domain.DecodeValidatorConfig(minimal)
	if err != nil {
		t.Fatalf("decode minimal version 0: %v", err)
	}
	rewritten, err := domain.EncodeValidatorConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	want := toJSONObject(t, minimal)
	want["version"] = float64(domain.ValidatorConfigVersion)
	for _, d := range diffJSON("", toJSONObject(t, rewritten), want) {
		t.Errorf("minimal version 0 row rewritten: %s", d)
	}
}

// responseNeverSet are the response fields no stored validator fills:
// createdUser only in the create response, the secret never, partyId and
// storageSize not before the validator reports them.
var responseNeverSet = map[string]bool{"CreatedUser": true, "SqlDbPassword": true, "PartyId": true, "StorageSize": true}

// TestCreateStoreResponse: a fully populated create payload, stored and read
// back, answers every field the response shows with the payload's value.
func TestCreateStoreResponse(t *testing.T) {
	dto := fullCreate()
	c := fullConfig()
	raw, err := domain.EncodeValidatorConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	v := domain.Validator{Name: dto.Name, Phase: domain.PhasePending, MigrationID: dto.ClusterConfig.Migration.Id, Spec: raw}
	r, err := (&Server{namespace: "validators"}).response(v)
	if err != nil {
		t.Fatal(err)
	}

	cc := dto.ClusterConfig
	db := *dto.DatabaseConfig
	db.Password = nil
	var sweeps []managementapi.WalletSweepDto
	fill(&sweeps)
	for _, f := range []struct {
		field     string
		got, want any
	}{
		{"imageRepo", r.ImageRepo, &dto.ImageRepo},
		{"imageTag", r.ImageTag, &dto.ImageTag},
		{"scanAddress", r.ScanAddress, &cc.ScanAddress},
		{"contactPoint", r.ContactPoint, cc.ContactPoint},
		{"disabledWallet", r.DisabledWallet, cc.DisabledWallet},
		{"disableProbes", r.DisableProbes, cc.DisableProbes},
		{"topUp", r.TopUp, cc.TopUp},
		{"appInfoValidator", r.AppInfoValidator, &cc.AppInfoValidator},
		{"appInfoLedgerNameService", r.AppInfoLedgerNameService, &cc.AppInfoLedgerNameService},
		{"appInfoWallet", r.AppInfoWallet, cc.AppInfoWallet},
		{"participantInfo", r.ParticipantInfo, &dto.Participant},
		{"envVars", r.EnvVars, dto.EnvVars},
		{"exposeLedgerApi", r.ExposeLedgerApi, dto.ClusterParticipantConfig.ExposeLedgerApi},
		{"privateJsonApi", r.PrivateJsonApi, dto.ClusterParticipantConfig.PrivateJsonApi},
		{"sqlDbConfig", r.SqlDbConfig, dto.SqlDbConfig},
		{"sqlDbUser", r.SqlDbUser, dto.SqlDbUser},
		{"databaseConfig", r.DatabaseConfig, &db},
		{"participantIdentitiesDumpSecretName", r.ParticipantIdentitiesDumpSecretName, &cc.ParticipantIdentitiesDumpImport.IdentitiesSecretName},
		{"onboardingSecretName", r.OnboardingSecretName, ptr(domain.OnboardingSecretName(dto.Name))},
		{"walletSweeps", r.WalletSweeps, &sweeps},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s: got %s, want %s", f.field, mustJSON(f.got), mustJSON(f.want))
		}
	}
	// Every field of the response is answered; a field the contract adds
	// fails here until response or configResponse fills it.
	rv := reflect.ValueOf(r)
	for i := 0; i < rv.NumField(); i++ {
		name := rv.Type().Field(i).Name
		if set := !rv.Field(i).IsNil(); set == responseNeverSet[name] {
			t.Errorf("response field %s: got set=%v, want %v", name, set, !responseNeverSet[name])
		}
	}
}

// TestEditMapping: an edit with every field set reaches the stored
// configuration and the response.
func TestEditMapping(t *testing.T) {
	var edit managementapi.ValidatorEditDto
	fill(&edit)
	edit.DatabaseStorage = ptr("20Gi")
	edit.ImageRepo = ptr("registry.example.test/splice") // the filled path is not a repository name
	edit.DatabaseConfig.External = ptr(false)
	kept := (*edit.ClusterConfig.AppInfoValidator.EnvVars)[0]
	edit.ClusterConfig.AppInfoValidator.EnvVars = &[]managementapi.EnvVar{kept, {Name: ptr("DROP"), Value: ptr("x")}}
	edit.ClusterConfig.AppInfoValidator.EnvVarsDelete = &[]managementapi.EnvVar{{Name: ptr("DROP")}}

	c := configFromCreate(fullCreate())
	raw, err := domain.EncodeValidatorConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	v := domain.Validator{Name: "v", MigrationID: 1, DatabaseStorage: defaultDatabaseStorage, Spec: raw}
	secrets, err := applyEdit(&v, &c, edit)
	if err != nil {
		t.Fatalf("applyEdit: %v", err)
	}
	if secrets.DatabasePassword != "databaseConfig.password" {
		t.Errorf("database password: got %q, want the edit's", secrets.DatabasePassword)
	}
	if v.DatabaseStorage != "20Gi" || v.MigrationID != edit.ClusterConfig.Migration.Id || !v.Migrating {
		t.Errorf("validator: got storage %s migration %d migrating %v, want 20Gi %d true", v.DatabaseStorage, v.MigrationID, v.Migrating, edit.ClusterConfig.Migration.Id)
	}
	if !c.CleanRestoreData {
		t.Error("cleanRestoreData: got false, want true")
	}
	if v.Spec, err = domain.EncodeValidatorConfig(c); err != nil {
		t.Fatal(err)
	}
	r, err := (&Server{namespace: "validators"}).response(v)
	if err != nil {
		t.Fatal(err)
	}
	cc := edit.ClusterConfig
	db := *edit.DatabaseConfig
	db.Password = nil
	for _, f := range []struct {
		field     string
		got, want any
	}{
		{"imageRepo", r.ImageRepo, edit.ImageRepo},
		{"imageTag", r.ImageTag, edit.ImageTag},
		{"databaseStorage", r.DatabaseStorage, edit.DatabaseStorage},
		{"scanAddress", r.ScanAddress, cc.ScanAddress},
		{"contactPoint", r.ContactPoint, cc.ContactPoint},
		{"topUp", r.TopUp, cc.TopUp},
		{"disableProbes", r.DisableProbes, cc.DisableProbes},
		{"migrationId", r.MigrationId, ptr(fmt.Sprint(cc.Migration.Id))},
		// envVars replaced the list, then envVarsDelete removed DROP.
		{"appInfoValidator.envVars", r.AppInfoValidator.EnvVars, []managementapi.EnvVar{kept}},
		{"appInfoLedgerNameService.envVars", r.AppInfoLedgerNameService.EnvVars, *cc.AppInfoLedgerNameService.EnvVars},
		{"appInfoWallet.envVars", r.AppInfoWallet.EnvVars, *cc.AppInfoWallet.EnvVars},
		{"participantInfo.envVars", r.ParticipantInfo.EnvVars, *edit.Participant.EnvVars},
		{"appInfoValidator.resources", r.AppInfoValidator.Resources, cc.AppInfoValidator.Resources},
		{"appInfoLedgerNameService.resources", r.AppInfoLedgerNameService.Resources, cc.AppInfoLedgerNameService.Resources},
		{"appInfoWallet.resources", r.AppInfoWallet.Resources, cc.AppInfoWallet.Resources},
		{"walletSweeps", r.WalletSweeps, cc.WalletSweeps},
		{"participantInfo.resources", r.ParticipantInfo.Resources, edit.Participant.Resources},
		{"exposeLedgerApi", r.ExposeLedgerApi, edit.ExposeLedgerApi},
		{"privateJsonApi", r.PrivateJsonApi, edit.PrivateJsonApi},
		{"databaseConfig", r.DatabaseConfig, &db},
		{"sqlDbConfig", r.SqlDbConfig, edit.SqlDbConfig},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s: got %s, want %s", f.field, mustJSON(f.got), mustJSON(f.want))
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// TestReferences: every object a full configuration names is checked, under
// the request field that named it.
func TestReferences(t *testing.T) {
	refs := references(fullConfig())
	var got []string
	for _, r := range refs.Secrets {
		got = append(got, "secret "+r.Field+"="+r.Name)
	}
	for _, r := range refs.SecretKeys {
		got = append(got, fmt.Sprintf("key %s=%s/%s optional=%v", r.Field, r.Name, r.Key, r.Optional))
	}
	for _, r := range refs.StorageClasses {
		got = append(got, "class "+r.Field+"="+r.Name)
	}
	sort.Strings(got)
	var want []string
	for _, f := range []string{"participant", "clusterConfig.appInfoValidator", "clusterConfig.appInfoLedgerNameService", "clusterConfig.appInfoWallet", "sqlDbConfig"} {
		want = append(want, "secret "+f+".resources.imagePullSecret="+f+".resources.imagePullSecret")
	}
	want = append(want,
		"secret clusterConfig.participantIdentitiesDumpImport.identitiesSecretName=clusterConfig.participantIdentitiesDumpImport.identitiesSecretName",
		"secret clusterConfig.participantIdentitiesDumpBackup.locationBucketSecretName=clusterConfig.participantIdentitiesDumpBackup.locationBucketSecretName",
		"class clusterConfig.pvcVolumeStorageClass=clusterConfig.pvcVolumeStorageClass")
	for _, f := range []string{"envVars", "participant.envVars", "clusterConfig.appInfoValidator.envVars", "clusterConfig.appInfoLedgerNameService.envVars", "clusterConfig.appInfoWallet.envVars", "clusterConfig.additionalUsersEnvVars"} {
		ref := f + ".0.valueFrom.secretKeyRef"
		want = append(want, fmt.Sprintf("key %s=%s.name/%s.key optional=true", ref, ref, ref))
	}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("references:\ngot  %q\nwant %q", got, want)
	}
}
