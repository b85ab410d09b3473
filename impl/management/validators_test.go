package management_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
)

func ptr[T any](v T) *T { return &v }

func customAuth(v managementapi.ValidatorDto) managementapi.ValidatorDto {
	v.CustomAuth = ptr(true)
	return v
}

func TestCreateValidator(t *testing.T) {
	e := start(t)
	ctx := context.Background()

	resp, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("alpha"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusCreated || resp.JSON201 == nil {
		t.Fatalf("got %d %s, want 201", resp.StatusCode(), resp.Body)
	}
	got := resp.JSON201
	u := got.CreatedUser
	if u == nil || *u.Username != "alpha_walletuser" || u.Id != nil || len(*u.TemporaryPassword) < 20 {
		t.Fatalf("createdUser: got %+v, want alpha_walletuser with a temporary password and no id (the provider assigns it later)", u)
	}
	if *got.Phase != managementapi.PENDING || *got.OnboardingSecretName != "alpha-onboarding" || *got.MigrationId != "1" || *got.DatabaseStorage != "10Gi" {
		t.Fatalf("got phase %v onboardingSecretName %v migrationId %v databaseStorage %v", *got.Phase, *got.OnboardingSecretName, *got.MigrationId, *got.DatabaseStorage)
	}
	if got.DatabaseConfig == nil || got.DatabaseConfig.Password != nil || *got.DatabaseConfig.Username != "cnadmin" {
		t.Fatalf("databaseConfig: got %+v, want the user without the password", got.DatabaseConfig)
	}

	// Side effects, once the leader has provisioned the recorded create:
	// the wallet user (who logs in with the password answered), the
	// resource and its Secrets.
	row := e.provisioned(t, "alpha")
	if row.Phase != domain.PhasePending || row.CustomAuth || row.PendingSecrets != "" {
		t.Fatalf("row: got %+v, want PENDING with the wallet user id and no pending secrets", row)
	}
	if id, err := e.App.Identity.(interface {
		CheckPassword(context.Context, string, string) (string, error)
	}).CheckPassword(ctx, "alpha_walletuser", *u.TemporaryPassword); err != nil || id != row.WalletUserID {
		t.Fatalf("login with the answered password: got %q, %v, want the wallet user %q", id, err, row.WalletUserID)
	}
	if users := e.idpUsers(t); !slices.Equal(users, []string{"alpha_walletuser"}) {
		t.Fatalf("identity provider users: got %v, want [alpha_walletuser]", users)
	}
	st := e.cluster(t)
	if _, ok := st.Validators["alpha"]; !ok {
		t.Fatal("cluster: no Validator resource alpha")
	}
	for _, name := range []string{"alpha-onboarding", "alpha-ledger-api-auth", "alpha-database"} {
		if _, ok := st.Secrets[name]; !ok {
			t.Errorf("cluster: no Secret %s (have %v)", name, st.Secrets)
		}
	}

	// The temporary password is shown once: a second create of the name is
	// 409 with the existing validator and no created user.
	again, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("alpha"))
	if err != nil {
		t.Fatal(err)
	}
	if again.StatusCode() != http.StatusConflict || again.JSON409 == nil || *again.JSON409.Name != "alpha" || again.JSON409.CreatedUser != nil {
		t.Fatalf("duplicate: got %d %s, want 409 with the existing validator and no createdUser", again.StatusCode(), again.Body)
	}
	if users := e.idpUsers(t); len(users) != 1 {
		t.Fatalf("duplicate created another wallet user: %v", users)
	}
	list, err := e.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(list.Body), *u.TemporaryPassword) || strings.Contains(string(list.Body), "createdUser") {
		t.Fatal("the created user's password is retrievable after creation")
	}
	assertNoSecrets(t, e, "alpha", resp.Body, again.Body, list.Body)
}

func TestCreateValidatorCustomAuth(t *testing.T) {
	e := start(t)
	resp, err := e.Management.CreateValidatorWithResponse(context.Background(), customAuth(apitest.ValidatorPayload("beta")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusCreated || resp.JSON201.CreatedUser != nil || !*resp.JSON201.CustomAuth {
		t.Fatalf("got %d %s, want 201 without createdUser", resp.StatusCode(), resp.Body)
	}
	if users := e.idpUsers(t); len(users) != 0 {
		t.Fatalf("custom authentication created wallet users %v", users)
	}
}

// TestCreateValidatorRejects: each bad payload is a 400 keyed by its field,
// and nothing is created anywhere.
func TestCreateValidatorRejects(t *testing.T) {
	e := start(t)
	if err := e.Kube.AddSecret(context.Background(), "partial", map[string]string{"other-key": "x"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		edit  func(*managementapi.ValidatorDto)
		field string
		msg   string
	}{
		{"image pull secret missing", func(v *managementapi.ValidatorDto) {
			v.Participant.Resources = &managementapi.ResourcesDto{ImagePullSecret: ptr("regcred")}
		}, "participant.resources.imagePullSecret", `secret "regcred" does not exist`},
		{"env var secret missing", func(v *managementapi.ValidatorDto) {
			v.ClusterConfig.AppInfoValidator.EnvVars = append(v.ClusterConfig.AppInfoValidator.EnvVars,
				managementapi.EnvVar{Name: ptr("TOKEN"), ValueFrom: &managementapi.EnvVarSource{SecretKeyRef: &managementapi.SecretKeySelector{Name: ptr("absent"), Key: ptr("token")}}})
		}, "clusterConfig.appInfoValidator.envVars.2.valueFrom.secretKeyRef", `"absent"`},
		{"env var secret key missing", func(v *managementapi.ValidatorDto) {
			v.EnvVars = &[]managementapi.EnvVar{{Name: ptr("TOKEN"), ValueFrom: &managementapi.EnvVarSource{SecretKeyRef: &managementapi.SecretKeySelector{Name: ptr("partial"), Key: ptr("token")}}}}
		}, "envVars.0.valueFrom.secretKeyRef", `"token"`},
		{"identities secret missing", func(v *managementapi.ValidatorDto) {
			v.ClusterConfig.ParticipantIdentitiesDumpImport = &managementapi.ParticipantIdentitiesImportDto{IdentitiesSecretName: "dump", NewParticipantIdentifier: "p2"}
		}, "clusterConfig.participantIdentitiesDumpImport.identitiesSecretName", `"dump"`},
		{"storage class missing", func(v *managementapi.ValidatorDto) {
			v.ClusterConfig.PvcVolumeStorageClass = ptr("fast-ssd")
		}, "clusterConfig.pvcVolumeStorageClass", `"fast-ssd"`},
		{"client secret missing", func(v *managementapi.ValidatorDto) { v.Auth.LedgerApiClientSecret = nil }, "auth.ledgerApiClientSecret", "is required"},
		{"image repository naming a component", func(v *managementapi.ValidatorDto) {
			v.ImageRepo = "ghcr.io/digital-asset/decentralized-canton-sync/docker/validator-app"
		}, "imageRepo", "<imageRepo>/<component>:<imageTag>"},
		{"image repository with a tag", func(v *managementapi.ValidatorDto) { v.ImageRepo = "registry.example.com/splice:0.4.2" }, "imageRepo", "registry prefix"},
		{"image tag that no reference can carry", func(v *managementapi.ValidatorDto) { v.ImageTag = "0.4.2 final" }, "imageTag", "is not an image tag"},
		{"external database without host", func(v *managementapi.ValidatorDto) {
			v.DatabaseConfig = &managementapi.ValidatorDbConfigDto{External: ptr(true), Port: ptr("5432")}
		}, "databaseConfig.hostname", "is required"},
		{"prune schedule with a bad cron", func(v *managementapi.ValidatorDto) {
			v.ClusterConfig.ScheduledPrune = &managementapi.ScheduledValidatorPruneDto{Cron: "0 0 25 * * ?", MaxDuration: "5m", Retention: "48h"}
		}, "clusterConfig.scheduledPrune.cron", "cron"},
		{"size limit not a quantity", func(v *managementapi.ValidatorDto) {
			v.SqlDbConfig = &managementapi.SqlDbConfigDto{Volumes: &[]managementapi.Volume{{Name: ptr("shm"),
				EmptyDir: &managementapi.EmptyDirVolumeSource{SizeLimit: &managementapi.SizeLimit{Amount: ptr("1"), Format: ptr("GB")}}}}}
		}, "sqlDbConfig.volumes.0.emptyDir.sizeLimit", "quantity"},
		{"volume with two sources", func(v *managementapi.ValidatorDto) {
			v.SqlDbConfig = &managementapi.SqlDbConfigDto{Volumes: &[]managementapi.Volume{{Name: ptr("x"),
				EmptyDir: &managementapi.EmptyDirVolumeSource{}, Secret: &managementapi.SecretVolumeSource{SecretName: ptr("s")}}}}
		}, "sqlDbConfig.volumes.0", "exactly one"},
		{"prune schedule with a zero retention", func(v *managementapi.ValidatorDto) {
			v.ClusterConfig.ScheduledPrune = &managementapi.ScheduledValidatorPruneDto{Cron: "0 0 20 * * ?", MaxDuration: "5m", Retention: "0s"}
		}, "clusterConfig.scheduledPrune.retention", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := apitest.ValidatorPayload("gamma")
			tc.edit(&v)
			resp, err := e.Management.CreateValidatorWithResponse(context.Background(), v)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode() != http.StatusBadRequest {
				t.Fatalf("got %d %s, want 400", resp.StatusCode(), resp.Body)
			}
			body := errorMap(t, resp.Body)
			if msg, ok := body[tc.field]; !ok || !strings.Contains(msg, tc.msg) {
				t.Fatalf("got %v, want key %s with a message containing %q", body, tc.field, tc.msg)
			}
			assertNothingCreated(t, e, "gamma")
		})
	}
	// Once the reference exists, the same payload is accepted.
	if err := e.Kube.AddSecret(context.Background(), "regcred", map[string]string{".dockerconfigjson": "{}"}); err != nil {
		t.Fatal(err)
	}
	v := apitest.ValidatorPayload("gamma")
	v.Participant.Resources = &managementapi.ResourcesDto{ImagePullSecret: ptr("regcred")}
	v.EnvVars = &[]managementapi.EnvVar{{Name: ptr("OPTIONAL"), ValueFrom: &managementapi.EnvVarSource{SecretKeyRef: &managementapi.SecretKeySelector{Name: ptr("nowhere"), Key: ptr("k"), Optional: ptr(true)}}}}
	if resp, err := e.Management.CreateValidatorWithResponse(context.Background(), v); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("with the secret in place: got %v %v, want 201", resp.StatusCode(), err)
	}
}

// TestCreateValidatorConcurrent: of simultaneous creates of one name exactly
// one wins; the others get 409, and only one wallet user exists.
func TestCreateValidatorConcurrent(t *testing.T) {
	e := start(t)
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.Management.CreateValidatorWithResponse(context.Background(), apitest.ValidatorPayload("delta"))
			if err != nil {
				t.Error(err)
				return
			}
			statuses[i] = resp.StatusCode()
		}()
	}
	wg.Wait()
	created, conflicts := 0, 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			conflicts++
		}
	}
	if created != 1 || conflicts != n-1 {
		t.Fatalf("got statuses %v, want one 201 and %d 409", statuses, n-1)
	}
	e.provisioned(t, "delta")
	if users := e.idpUsers(t); len(users) != 1 {
		t.Fatalf("got wallet users %v, want exactly one", users)
	}
}

// TestCreateValidatorRecordedIsFinished injects a failure at every step the
// leader takes for a create: the create answered 201 at once, and the
// validator is provisioned once the failure is gone (a recorded create is
// finished, never undone).
func TestCreateValidatorRecordedIsFinished(t *testing.T) {
	e := start(t)
	for i, point := range []string{"identity.CreateWalletUser", "store.SetWalletUser", "cluster.ApplyValidator", "cluster.PutSecrets"} {
		t.Run(point, func(t *testing.T) {
			t.Cleanup(e.faults.clear)
			e.faults.failBefore(point)
			name := fmt.Sprintf("epsilon%d", i)
			v := apitest.ValidatorPayload(name)
			v.ClusterConfig.ScheduledPrune = &managementapi.ScheduledValidatorPruneDto{Cron: "0 0 20 * * ?", MaxDuration: "5m", Retention: "48h"}
			resp, err := e.Management.CreateValidatorWithResponse(context.Background(), v)
			if err != nil || resp.StatusCode() != http.StatusCreated {
				t.Fatalf("got %v %v, want 201", resp.StatusCode(), err)
			}
			e.faults.clear()
			e.reconcileAll(t)
			e.provisioned(t, name)
			if users := e.idpUsers(t); !slices.Contains(users, name+"_walletuser") {
				t.Fatalf("wallet users %v, want %s_walletuser", users, name)
			}
		})
	}
}

// TestCreateValidatorRecordFails: a create whose record cannot be written
// (the database down) answers 503 and leaves nothing anywhere.
func TestCreateValidatorRecordFails(t *testing.T) {
	e := start(t)
	e.faults.failBeforeWith("store.RecordCreate", domain.Unavailable("database is unavailable; retry later"))
	resp, err := e.Management.CreateValidatorWithResponse(context.Background(), apitest.ValidatorPayload("zeta"))
	if err != nil || resp.StatusCode() != http.StatusServiceUnavailable {
		t.Fatalf("got %v %v, want 503", resp.StatusCode(), err)
	}
	e.faults.clear()
	assertNothingCreated(t, e, "zeta")
}

// TestCreateValidatorUserExists: a wallet user someone else left in the
// identity provider does not refuse the create; the validator stays
// PENDING, its record says why, and release 2.0's reads of its resource
// show the Provisioned condition with its reason, until the user is removed:
// then the validator is provisioned and the condition turns True.
func TestCreateValidatorUserExists(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	other, err := e.App.Identity.CreateWalletUser(ctx, "omega", "", "Someone-elses-Pa55word")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("omega"))
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("got %v %v, want 201", resp.StatusCode(), err)
	}
	apitest.Eventually(t, 10*time.Second, "the provisioning failure is recorded", func() error {
		row, _ := e.row(t, "omega")
		if !strings.Contains(row.ProvisionError, "omega_walletuser") || row.Phase != domain.PhasePending {
			return fmt.Errorf("row: provision error %q, phase %s", row.ProvisionError, row.Phase)
		}
		return nil
	})
	provisioned := func(status, reason string) error {
		for _, read := range []func() (int, []byte, error){
			func() (int, []byte, error) {
				r, err := e.Platform.GetValidatorStatusWithResponse(ctx, "omega")
				if err != nil {
					return 0, nil, err
				}
				return r.StatusCode(), r.Body, nil
			},
			func() (int, []byte, error) {
				r, err := e.Platform.GetValidatorWithResponse(ctx, "omega")
				if err != nil {
					return 0, nil, err
				}
				var v struct {
					Status json.RawMessage `json:"status"`
				}
				err = json.Unmarshal(r.Body, &v)
				return r.StatusCode(), v.Status, err
			},
		} {
			code, body, err := read()
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("read: %d %v", code, err)
			}
			var st struct {
				Phase      string `json:"phase"`
				Conditions []struct {
					Type, Status, Reason, Message string
				} `json:"conditions"`
			}
			if err := json.Unmarshal(body, &st); err != nil {
				return err
			}
			if st.Phase != "" && st.Phase != string(domain.PhasePending) {
				return fmt.Errorf("phase %s, want PENDING", st.Phase)
			}
			found := false
			for _, c := range st.Conditions {
				if c.Type == "Provisioned" {
					found = c.Status == status && c.Reason == reason && c.Message != "" && !strings.Contains(c.Message, "Pa55word")
				}
			}
			if !found {
				return fmt.Errorf("status %s: want condition Provisioned %s %s", body, status, reason)
			}
		}
		return nil
	}
	apitest.Eventually(t, 10*time.Second, "release 2.0 shows the failure", func() error {
		return provisioned("False", "WalletUserConflict")
	})
	if err := e.App.Identity.(interface {
		DeleteUser(context.Context, string) error
	}).DeleteUser(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, 30*time.Second, "the condition clears", func() error {
		return provisioned("True", "Provisioned")
	})
	if row, _ := e.row(t, "omega"); row.ProvisionError != "" || row.WalletUserID == "" {
		t.Fatalf("row: provision error %q, wallet user %q; want none, the user made", row.ProvisionError, row.WalletUserID)
	}
}

func TestListValidators(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	names := []string{"a-b", "ab", "node-1"}
	for i := range 22 {
		names = append(names, fmt.Sprintf("v%02d", i))
	}
	for _, n := range names {
		if resp, err := e.Management.CreateValidatorWithResponse(ctx, customAuth(apitest.ValidatorPayload(n))); err != nil || resp.StatusCode() != http.StatusCreated {
			t.Fatalf("create %s: %v %v", n, resp.StatusCode(), err)
		}
	}
	list := func(p managementapi.ListValidatorsParams) ([]string, int64) {
		t.Helper()
		resp, err := e.Management.ListValidatorsWithResponse(ctx, &p)
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("list %+v: %v %s", p, err, resp.Body)
		}
		var got []string
		for _, v := range resp.JSON200.Validators {
			got = append(got, *v.Name)
		}
		return got, resp.JSON200.TotalCount
	}

	got, total := list(managementapi.ListValidatorsParams{})
	if len(got) != 20 || total != 25 || got[0] != "a-b" || got[19] != "v16" {
		t.Fatalf("default page: got %d items %v total %d, want the first 20 of 25 by name", len(got), got, total)
	}
	var walked []string
	for from := int32(0); from < 25; from += 7 {
		page, _ := list(managementapi.ListValidatorsParams{From: ptr(from), Limit: ptr[int32](7)})
		walked = append(walked, page...)
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if !slices.Equal(walked, sorted) {
		t.Fatalf("pages of 7: got %v, want every validator once in name order", walked)
	}
	if got, total := list(managementapi.ListValidatorsParams{From: ptr[int32](100)}); len(got) != 0 || total != 25 {
		t.Fatalf("past the end: got %v total %d, want none of 25", got, total)
	}
	// The name filter is a literal substring: _ is not a wildcard.
	filters := map[string][]string{"a_b": nil, "a-b": {"a-b"}, "-": {"a-b", "node-1"}, "V0": nil, "v0": {"v00", "v01", "v02", "v03", "v04", "v05", "v06", "v07", "v08", "v09"}}
	for filter, want := range filters {
		if got, total := list(managementapi.ListValidatorsParams{Name: ptr(filter), Limit: ptr[int32](500)}); !slices.Equal(got, want) || total != int64(len(want)) {
			t.Errorf("name=%q: got %v (total %d), want %v", filter, got, total, want)
		}
	}
	// Phases come from the cluster (the workload controller writes them):
	// the last one has none yet (PENDING), the three before it run, the
	// rest have completed.
	for i, n := range names[:24] {
		phase := domain.PhaseCompleted
		if i >= 21 {
			phase = domain.PhaseRunning
		}
		e.provisioned(t, n)
		if err := e.Kube.SetStatus(ctx, n, phase, true); err != nil {
			t.Fatal(err)
		}
	}
	e.settle(t)
	running, _ := list(managementapi.ListValidatorsParams{Status: ptr(managementapi.RUNNING), Limit: ptr[int32](500)})
	completed, _ := list(managementapi.ListValidatorsParams{Status: ptr(managementapi.COMPLETED), Limit: ptr[int32](500)})
	pending, _ := list(managementapi.ListValidatorsParams{Status: ptr(managementapi.PENDING), Limit: ptr[int32](500)})
	if !slices.Equal(pending, []string{"v21"}) || !slices.Equal(running, []string{"v18", "v19", "v20"}) || len(completed) != 21 {
		t.Fatalf("got pending %v, running %v, %d completed, want [v21], [v18 v19 v20] and 21", pending, running, len(completed))
	}
}

func TestUpdateValidator(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	if resp, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("zeta")); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", resp.StatusCode(), err)
	}
	get := func() managementapi.ValidatorResponseDto {
		t.Helper()
		resp, err := e.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: ptr("zeta")})
		if err != nil || resp.JSON200 == nil || len(resp.JSON200.Validators) != 1 {
			t.Fatalf("read back: %v %s", err, resp.Body)
		}
		return resp.JSON200.Validators[0]
	}
	put := func(body string) (int, map[string]string) {
		t.Helper()
		resp, err := e.Management.UpdateValidatorWithBodyWithResponse(ctx, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() == http.StatusOK {
			if len(resp.Body) != 0 {
				t.Fatalf("200 with body %s, want none", resp.Body)
			}
			return http.StatusOK, nil
		}
		return resp.StatusCode(), errorMap(t, resp.Body)
	}

	// Partial: only the image tag changes.
	before := get()
	if st, body := put(`{"name":"zeta","imageTag":"0.5.0","imageRepo":null}`); st != http.StatusOK {
		t.Fatalf("got %d %v, want 200", st, body)
	}
	after := get()
	if *after.ImageTag != "0.5.0" || *after.ImageRepo != *before.ImageRepo || *after.ScanAddress != *before.ScanAddress || len(after.AppInfoValidator.EnvVars) != 2 {
		t.Fatalf("partial update changed more than the tag: before %+v after %+v", before, after)
	}

	// envVars replaces, envVarsDelete removes by name; migration rises.
	if st, body := put(`{"name":"zeta","clusterConfig":{"migration":{"id":2,"migrating":true},
		"appInfoValidator":{"envVarsDelete":[{"name":"JAVA_OPTS"}]}},
		"participant":{"envVars":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}}`); st != http.StatusOK {
		t.Fatalf("got %d %v, want 200", st, body)
	}
	after = get()
	if n := after.AppInfoValidator.EnvVars; len(n) != 1 || *n[0].Name != "LOG_LEVEL" {
		t.Fatalf("envVarsDelete: got %+v, want only LOG_LEVEL", n)
	}
	if n := after.ParticipantInfo.EnvVars; len(n) != 2 || *n[0].Name != "A" {
		t.Fatalf("envVars: got %+v, want [A B]", n)
	}
	if *after.MigrationId != "2" || !*after.MigrationMigrating {
		t.Fatalf("migration: got %s migrating %v, want 2 true", *after.MigrationId, *after.MigrationMigrating)
	}
	// The edit answers once recorded; the leader applies it.
	apitest.Eventually(t, 10*time.Second, "the edit applied to the cluster", func() error {
		if spec := e.cluster(t).Validators["zeta"].Spec; fmt.Sprint(spec["migration"]) != "map[id:2 migrating:true]" {
			return fmt.Errorf("cluster resource migration: got %v, want id 2 migrating", spec["migration"])
		}
		return nil
	})

	// Immutable fields and images that cannot exist: 400 keyed by the
	// field, and nothing changes.
	rejected := []struct{ body, field string }{
		{`{"name":"zeta","databaseConfig":{"external":true,"hostname":"db","port":"5432"}}`, "databaseConfig.external"},
		{`{"name":"zeta","databaseStorage":"5Gi"}`, "databaseStorage"},
		{`{"name":"zeta","clusterConfig":{"migration":{"id":1}}}`, "clusterConfig.migration.id"},
		{`{"name":"zeta","imageRepo":"registry.example.com/splice/canton-participant"}`, "imageRepo"},
		{`{"name":"zeta","imageTag":":latest"}`, "imageTag"},
		{`{"name":"zeta","sqlDbConfig":{"volumes":[{"name":"v","emptyDir":{"sizeLimit":{"amount":"x"}}}]}}`, "sqlDbConfig.volumes.0.emptyDir.sizeLimit"},
	}
	snapshot, _ := e.row(t, "zeta")
	for _, r := range rejected {
		st, body := put(r.body)
		if _, ok := body[r.field]; st != http.StatusBadRequest || !ok {
			t.Errorf("%s: got %d %v, want 400 keyed %s", r.body, st, body, r.field)
		}
	}
	if now, _ := e.row(t, "zeta"); string(now.Spec) != string(snapshot.Spec) || now.MigrationID != snapshot.MigrationID || now.DatabaseStorage != snapshot.DatabaseStorage {
		t.Fatal("a rejected edit changed the stored validator")
	}
	if st, body := put(`{"name":"zeta","databaseStorage":"20Gi"}`); st != http.StatusOK {
		t.Fatalf("growing the storage: got %d %v, want 200", st, body)
	}

	// Quantities read back in Kubernetes' canonical form (docs/decisions.md).
	if st, body := put(`{"name":"zeta","participant":{"resources":{"cpuLimit":"0.5","memoryLimit":"1.5Gi","replicas":1}}}`); st != http.StatusOK {
		t.Fatalf("resources: got %d %v, want 200", st, body)
	}
	if r := get().ParticipantInfo.Resources; r == nil || string(mustJSON(t, r)) != `{"cpuLimit":"500m","memoryLimit":"1536Mi","replicas":1}` {
		t.Fatalf("resources: got %s, want the canonical quantities", mustJSON(t, r))
	}

	// A new database password goes to the cluster Secret, never to a response.
	if st, body := put(`{"name":"zeta","databaseConfig":{"username":"admin2","password":"` + apitest.DatabasePassword + `-new"}}`); st != http.StatusOK {
		t.Fatalf("got %d %v, want 200", st, body)
	}
	if got := get(); *got.DatabaseConfig.Username != "admin2" || got.DatabaseConfig.Password != nil {
		t.Fatalf("databaseConfig: got %+v", got.DatabaseConfig)
	}
	list, err := e.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{})
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, e, "zeta", list.Body)

	if st, _ := put(`{"name":"nobody","imageTag":"1"}`); st != http.StatusNotFound {
		t.Fatalf("unknown validator: got %d, want 404", st)
	}

	// disableUserEdit (set on the resource by an operator) freezes it: 409.
	if err := e.Kube.SetDisableUserEdit(context.Background(), "zeta", true); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if !*get().Immutable {
		t.Fatal("immutable: got false after the annotation, want true")
	}
	if st, body := put(`{"name":"zeta","imageTag":"0.6.0"}`); st != http.StatusConflict || !strings.Contains(body["error"], "not editable") {
		t.Fatalf("frozen validator: got %d %v, want 409 not editable", st, body)
	}

	// An edit is recorded even while the cluster refuses it; the
	// controller applies it once the cluster accepts.
	if err := e.Kube.SetDisableUserEdit(context.Background(), "zeta", false); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	e.faults.failBefore("cluster.ApplyValidator")
	if st, _ := put(`{"name":"zeta","imageTag":"9.9.9"}`); st != http.StatusOK {
		t.Fatalf("edit while the cluster refuses: got %d, want 200", st)
	}
	if *get().ImageTag != "9.9.9" {
		t.Fatal("the edit was not recorded")
	}
	e.faults.clear()
	e.reconcile(t, "zeta")
	if cfg, _ := e.cluster(t).Validators["zeta"].Spec["config"].(map[string]any); cfg["imageTag"] != "9.9.9" {
		t.Fatalf("cluster resource after the failure cleared: got imageTag %v, want 9.9.9", cfg["imageTag"])
	}
}

// TestUpdateValidatorRecordFails: an edit with a new database password whose
// record cannot be written (a full disk) answers 503, and the Secret still
// holds the old password: the handler writes nothing else.
func TestUpdateValidatorRecordFails(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	if r, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("eta")); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", r.StatusCode(), err)
	}
	before := e.provisioned(t, "eta")
	e.faults.failBeforeWith("store.UpdateValidator", domain.Unavailable("database is unavailable; retry later"))
	edit := managementapi.ValidatorEditDto{Name: "eta", DatabaseConfig: &managementapi.ValidatorDbConfigDto{Username: ptr("cnadmin"), Password: ptr("rotated-password")}}
	r, err := e.Management.UpdateValidatorWithResponse(ctx, edit)
	if err != nil || r.StatusCode() != http.StatusServiceUnavailable {
		t.Fatalf("edit on a full disk: got %v %v, want 503", r.StatusCode(), err)
	}
	e.faults.clear()
	// Nothing was written: the row holds no value for the leader to put in
	// the Secret (the handler never writes the Secret itself).
	if after, _ := e.row(t, "eta"); after.PendingSecrets != "" || !reflect.DeepEqual(after.Spec, before.Spec) {
		t.Fatal("the row changed although its write failed")
	}
	// Recorded, the edit reaches the Secret through the leader.
	if r, err := e.Management.UpdateValidatorWithResponse(ctx, edit); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("edit: got %v %v, want 200", r.StatusCode(), err)
	}
	if after, _ := e.row(t, "eta"); after.PendingSecrets == "" && reflect.DeepEqual(after.Spec, before.Spec) {
		t.Fatal("the recorded edit is not in the row")
	}
	e.provisioned(t, "eta") // the leader wrote the values and cleared them
}

// TestUpdateValidatorConcurrentEdits: two edits of one validator that touch
// different sections both take effect, whichever reads first and writes
// last. Edit A (the image tag) reads the row; edit B (participant variables
// and a new database password) reads and writes it before A writes; A's
// write must not put back the row it read, which would drop B's variables
// and its password, although B was answered 200.
func TestUpdateValidatorConcurrentEdits(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	if r, err := e.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("kappa")); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", r.StatusCode(), err)
	}
	e.provisioned(t, "kappa")
	// The leader leaves B's password in the row, so that A's write meets it.
	e.faults.failBefore("cluster.PutSecrets")
	e.faults.beforeNext("store.UpdateValidator", func() {
		b := managementapi.ValidatorEditDto{Name: "kappa",
			Participant:    &managementapi.AppInfoEditDto{EnvVars: &[]managementapi.EnvVar{{Name: ptr("B"), Value: ptr("2")}}},
			DatabaseConfig: &managementapi.ValidatorDbConfigDto{Username: ptr("cnadmin"), Password: ptr("password-of-edit-b")}}
		if r, err := e.Management.UpdateValidatorWithResponse(ctx, b); err != nil || r.StatusCode() != http.StatusOK {
			t.Errorf("edit B: got %v %v, want 200", r.StatusCode(), err)
		}
	})
	a := managementapi.ValidatorEditDto{Name: "kappa", ImageTag: ptr("0.5.0")}
	if r, err := e.Management.UpdateValidatorWithResponse(ctx, a); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("edit A: got %v %v, want 200", r.StatusCode(), err)
	}
	row, _ := e.row(t, "kappa")
	cfg, err := row.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ImageTag != "0.5.0" {
		t.Errorf("imageTag: got %q, want edit A's 0.5.0", cfg.ImageTag)
	}
	if vars := cfg.Participant.EnvVars; len(vars) != 1 || vars[0].Name != "B" {
		t.Errorf("participant envVars: got %+v, want edit B's [B]", vars)
	}
	if row.PendingSecrets == "" {
		t.Error("edit B's database password is no longer in the row")
	}
	e.faults.clear()
	e.reconcile(t, "kappa")
	s, err := e.Kube.Core.CoreV1().Secrets(e.Kube.Namespace).Get(ctx, "kappa-database", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Data["password"]); got != "password-of-edit-b" {
		t.Errorf("database Secret: password is not edit B's")
	}
}

// assertNothingCreated: no row, wallet user, resource or Secret of name,
// once the intent controller has undone what a failed create left.
// provisioned waits until the leader has provisioned name: its wallet user
// recorded, its pending secrets written, its resource and Secrets there.
func (e *env) provisioned(t *testing.T, name string) domain.Validator {
	t.Helper()
	var row domain.Validator
	apitest.Eventually(t, 10*time.Second, "validator "+name+" provisioned", func() error {
		var ok bool
		if row, ok = e.row(t, name); !ok {
			return fmt.Errorf("no row")
		}
		if (!row.CustomAuth && row.WalletUserID == "") || row.PendingSecrets != "" || row.ProvisionError != "" {
			return fmt.Errorf("row: wallet user %q, pending secrets %t, provision error %q", row.WalletUserID, row.PendingSecrets != "", row.ProvisionError)
		}
		st := e.cluster(t)
		if _, ok := st.Validators[name]; !ok {
			return fmt.Errorf("no Validator resource")
		}
		for _, s := range []string{name + "-onboarding", name + "-database"} {
			if _, ok := st.Secrets[s]; !ok {
				return fmt.Errorf("no Secret %s", s)
			}
		}
		return nil
	})
	return row
}

func assertNothingCreated(t *testing.T, e *env, name string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, ok := e.row(t, name); !ok {
			break
		}
	}
	if _, ok := e.row(t, name); ok {
		t.Errorf("row %s left behind", name)
	}
	for _, u := range e.idpUsers(t) {
		if u == name+"_walletuser" {
			t.Errorf("wallet user %s left behind", u)
		}
	}
	st := e.cluster(t)
	if _, ok := st.Validators[name]; ok {
		t.Errorf("Validator resource %s left behind", name)
	}
	for s := range st.Secrets {
		if strings.HasPrefix(s, name+"-") {
			t.Errorf("Secret %s left behind", s)
		}
	}
}

// assertNoSecrets: no secret value in the responses, the logs, the cluster
// state or the validator's database row.
func assertNoSecrets(t *testing.T, e *env, validator string, bodies ...[]byte) {
	t.Helper()
	raw, _ := json.Marshal(e.cluster(t))
	row, _ := e.row(t, validator)
	texts := map[string]string{"log": e.Logs(), "cluster state": string(raw), "database row": string(row.Spec)}
	for i, b := range bodies {
		texts[fmt.Sprintf("response %d", i+1)] = string(b)
	}
	for _, secret := range []string{apitest.OnboardingSecret, apitest.ClientSecret, apitest.DatabasePassword} {
		for where, text := range texts {
			if strings.Contains(text, secret) {
				t.Errorf("the %s contains a secret value", where)
			}
		}
	}
}

func errorMap(t *testing.T, body []byte) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("error body %s is not a JSON object of strings: %v", body, err)
	}
	return m
}
