package management

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Fixtures of the stored format:
//   - stored-config-v0.json and stored-config-v0-minimal.json were written
//     by the code before the version marker (a storedSpec embedding the 1.11
//     ValidatorDto): rows and resources in the field hold this.
//   - stored-config-v1.json is what the server of version 1 wrote for its
//     fullConfig() (every string its path, quantities that do not parse).
//   - ../apis/v1alpha1/testdata/stored-config-v1.json is a realistic
//     version 1 row, list-view-v1-realistic.json its list view as that
//     server rendered it.
//   - stored-config-v2.json is what this server writes for fullConfig(); a
//     change of the stored format shows here first (go test -update rewrites
//     it; then raise domain.ValidatorConfigVersion if old servers would
//     misread the new form, and keep reading the old one).
const (
	goldenV0        = "testdata/stored-config-v0.json"
	goldenV0Minimal = "testdata/stored-config-v0-minimal.json"
	goldenV1        = "testdata/stored-config-v1.json"
	goldenV2        = "testdata/stored-config-v2.json"
	realisticV1     = "../apis/v1alpha1/testdata/stored-config-v1.json"
	realisticView   = "testdata/list-view-v1-realistic.json"
)

// fullCreate is a create payload with every field set, secrets included.
func fullCreate() managementapi.ValidatorDto {
	var dto managementapi.ValidatorDto
	fill(&dto)
	fillKubernetes(&dto)
	return dto
}

// fullConfig is fullCreate as created, then given wallet sweeps and
// cleanRestoreData by an edit: every field of the stored format is set.
func fullConfig() domain.ValidatorConfig {
	dto := fullCreate()
	c, err := configFromCreate(dto)
	if err != nil {
		panic(err)
	}
	c.MarkWritten(splitSecrets(dto).Written())
	var sweeps []managementapi.WalletSweepDto
	fill(&sweeps)
	c.WalletSweeps = mapSlice(sweeps, convert[domain.WalletSweep])
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
// the secret values and the phase reaches the stored configuration, under
// the name it had in version 0; the applications and the database workload,
// stored in Kubernetes' types, map back to the payload's. A field the
// contract adds fails here until mapping.go maps it (or decides to drop it).
func TestCreateMappingKeepsEveryField(t *testing.T) {
	dto := fullCreate()
	want := toJSONObject(t, dto)
	delete(want, "onboardingSecret")
	delete(want, "sqlDbPassword")
	delete(want, "phase")
	delete(want["auth"].(map[string]any), "ledgerApiClientSecret")
	delete(want["databaseConfig"].(map[string]any), "password")

	c, err := configFromCreate(dto)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := domain.EncodeValidatorConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	got := toJSONObject(t, raw)
	if _, ok := got["phase"]; ok {
		t.Error("the stored configuration holds a phase (the status does)")
	}
	stored, err := domain.DecodeValidatorConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	cluster := got["clusterConfig"].(map[string]any)
	got["participant"] = toJSONObject(t, fromApp(stored.Participant))
	cluster["appInfoValidator"] = toJSONObject(t, fromApp(stored.Cluster.ValidatorApp))
	cluster["appInfoLedgerNameService"] = toJSONObject(t, fromApp(stored.Cluster.NameService))
	cluster["appInfoWallet"] = toJSONObject(t, fromApp(*stored.Cluster.Wallet))
	got["sqlDbConfig"] = toJSONObject(t, fromDatabaseWorkload(*stored.DatabaseWorkload))
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
		if err := os.WriteFile(goldenV2, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenV2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("stored format of the fixture changed (go test -update rewrites %s):\n%s",
			goldenV2, strings.Join(diffJSON("", toJSONObject(t, got.Bytes()), toJSONObject(t, want)), "\n"))
	}
}

// TestVersion0RowsDecode: rows written before the version marker decode as
// rows of version 1 (the same layout), quantities that do not parse left
// out; both are written back as the current version.
func TestVersion0RowsDecode(t *testing.T) {
	read := func(path string) (domain.ValidatorConfig, []byte) {
		t.Helper()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := domain.DecodeValidatorConfig(raw)
		if err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
		return c, raw
	}
	got, _ := read(goldenV0)
	if got.Version != 0 {
		t.Errorf("version of a row without marker: got %d, want 0", got.Version)
	}
	want, _ := read(goldenV1)
	got.Version = want.Version
	if mustJSON(got) != mustJSON(want) { // JSON: a quantity compares by value, a time.Time is opaque to reflection
		t.Errorf("version 0 row decoded differently from version 1:\n%s", strings.Join(diffJSON("", toJSONObject(t, got), toJSONObject(t, want)), "\n"))
	}
	if r := want.Participant.Resources; r == nil || len(r.Limits)+len(r.Requests) != 0 || *want.Participant.Replicas != 30 {
		t.Errorf("participant resources of version 1: got %+v, want no quantity (none parses) and replicas 30", want.Participant.Workload)
	}

	c, minimal := read(goldenV0Minimal)
	rewritten, err := domain.EncodeValidatorConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	wantMinimal := toJSONObject(t, minimal)
	wantMinimal["version"] = float64(domain.ValidatorConfigVersion)
	for _, d := range diffJSON("", toJSONObject(t, rewritten), wantMinimal) {
		t.Errorf("minimal version 0 row rewritten: %s", d)
	}
}

// TestVersion1RowListsAsBefore: a realistic row of version 1 renders the
// list item the version 1 server rendered for it, byte for byte, and keeps
// doing so once written back as version 2.
func TestVersion1RowListsAsBefore(t *testing.T) {
	raw, err := os.ReadFile(realisticV1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(realisticView)
	if err != nil {
		t.Fatal(err)
	}
	v := domain.Validator{Name: "legacy", Phase: domain.PhaseRunning, MigrationID: 3, DatabaseStorage: "10Gi", Spec: raw}
	for _, step := range []string{"version 1", "written back"} {
		c, err := v.Config()
		if err != nil {
			t.Fatal(err)
		}
		if err := setConfig(&v, c); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := json.Indent(&got, v.ListView, "", "  "); err != nil {
			t.Fatal(err)
		}
		got.WriteByte('\n')
		if got.String() != string(want) {
			t.Errorf("%s: list view\n%s\nwant\n%s", step, got.Bytes(), want)
		}
		if !bytes.Contains(v.Spec, []byte(`"version":2`)) {
			t.Errorf("%s: written as %s, want version 2", step, v.Spec)
		}
	}
}

// TestQuantitiesCanonical: a quantity reads back in Kubernetes' canonical
// form (docs/decisions.md), a size limit split into amount and format.
func TestQuantitiesCanonical(t *testing.T) {
	dto := fullCreate()
	dto.Participant.Resources = &managementapi.ResourcesDto{CpuLimit: ptr.To("0.5"), CpuRequested: ptr.To("100m"), MemoryLimit: ptr.To("1.5Gi"), MemoryRequested: ptr.To("1000Mi")}
	(*dto.SqlDbConfig.Volumes)[2].EmptyDir.SizeLimit = &managementapi.SizeLimit{Amount: ptr.To("2048"), Format: ptr.To("Mi")}
	c, err := configFromCreate(dto)
	if err != nil {
		t.Fatal(err)
	}
	r := configResponse(c)
	got := mustJSON(r.ParticipantInfo.Resources) + " " + mustJSON((*r.SqlDbConfig.Volumes)[2].EmptyDir.SizeLimit)
	if want := `{"cpuLimit":"500m","cpuRequested":"100m","memoryLimit":"1536Mi","memoryRequested":"1000Mi"} {"amount":"2","format":"Gi"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestMappingRefuses: what Kubernetes would refuse is a 400 keyed by the
// request field, at create and at edit.
func TestMappingRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*managementapi.ValidatorDto)
		field string
	}{
		{"cpu limit", func(d *managementapi.ValidatorDto) { d.Participant.Resources.CpuLimit = ptr.To("two") }, "participant.resources.cpuLimit"},
		{"memory request", func(d *managementapi.ValidatorDto) {
			d.ClusterConfig.AppInfoWallet.Resources.MemoryRequested = ptr.To("1 Gi")
		}, "clusterConfig.appInfoWallet.resources.memoryRequested"},
		{"database cpu request", func(d *managementapi.ValidatorDto) { d.SqlDbConfig.Resources.CpuRequested = ptr.To("") }, "sqlDbConfig.resources.cpuRequested"},
		{"size limit", func(d *managementapi.ValidatorDto) {
			(*d.SqlDbConfig.Volumes)[2].EmptyDir.SizeLimit.Format = ptr.To("GB")
		}, "sqlDbConfig.volumes.2.emptyDir.sizeLimit"},
		{"two sources", func(d *managementapi.ValidatorDto) {
			(*d.SqlDbConfig.Volumes)[0].Secret = &managementapi.SecretVolumeSource{SecretName: ptr.To("s")}
		}, "sqlDbConfig.volumes.0"},
		{"no source", func(d *managementapi.ValidatorDto) {
			(*d.SqlDbConfig.Volumes)[1].Secret = nil
		}, "sqlDbConfig.volumes.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dto := fullCreate()
			tc.edit(&dto)
			_, err := configFromCreate(dto)
			var bad domain.Invalids
			if !errors.As(err, &bad) || len(bad) != 1 || bad[0].Field != tc.field {
				t.Errorf("create: got %v, want one invalid field %s", err, tc.field)
			}
			var edit managementapi.ValidatorEditDto
			edit.Participant = &managementapi.AppInfoEditDto{Resources: dto.Participant.Resources}
			edit.ClusterConfig = &managementapi.ClusterConfigEditDto{AppInfoWallet: &managementapi.AppInfoEditDto{Resources: dto.ClusterConfig.AppInfoWallet.Resources}}
			edit.SqlDbConfig = dto.SqlDbConfig
			c := fullConfig()
			v := domain.Validator{Name: "v"}
			_, err = applyEdit(&v, &c, edit)
			if !errors.As(err, &bad) || len(bad) != 1 || bad[0].Field != tc.field {
				t.Errorf("edit: got %v, want one invalid field %s", err, tc.field)
			}
		})
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
	r, err := (&Server{Options: Options{Namespace: "validators"}}).response(v)
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
		{"onboardingSecretName", r.OnboardingSecretName, ptr.To(domain.OnboardingSecretName(dto.Name))},
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
	fillKubernetes(&edit)
	edit.DatabaseStorage = ptr.To("20Gi")
	edit.ImageRepo = ptr.To("registry.example.test/splice") // the filled path is not a repository name
	edit.DatabaseConfig.External = ptr.To(false)
	kept := (*edit.ClusterConfig.AppInfoValidator.EnvVars)[0]
	edit.ClusterConfig.AppInfoValidator.EnvVars = &[]managementapi.EnvVar{kept, {Name: ptr.To("DROP"), Value: ptr.To("x")}}
	edit.ClusterConfig.AppInfoValidator.EnvVarsDelete = &[]managementapi.EnvVar{{Name: ptr.To("DROP")}}

	c := fullConfig()
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
	r, err := (&Server{Options: Options{Namespace: "validators"}}).response(v)
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
		{"migrationId", r.MigrationId, ptr.To(fmt.Sprint(cc.Migration.Id))},
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
