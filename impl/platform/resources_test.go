package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
)

func ptr[T any](v T) *T { return &v }

// settle waits until the server's caches hold what the namespace holds.
func settle(t *testing.T, s *apitest.Server) {
	t.Helper()
	if err := s.Kube.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func validatorDto(name string) managementapi.ValidatorDto {
	none := []managementapi.EnvVar{}
	return managementapi.ValidatorDto{
		Name:      name,
		ImageRepo: "registry.example.com/splice",
		ImageTag:  "0.4.2",
		ClusterConfig: managementapi.ClusterConfigDto{
			AppInfoLedgerNameService: managementapi.AppInfoDto{EnvVars: none},
			AppInfoValidator:         managementapi.AppInfoDto{EnvVars: none},
			DefaultJvmOptions:        "-Xms1g",
			PartyHint:                "acme-validator_1",
			ScanAddress:              "https://scan.example.com",
			SvSponsorAddress:         "https://sv.example.com",
		},
		Participant:      managementapi.AppInfoDto{EnvVars: none},
		OnboardingSecret: ptr("onboarding-secret"),
	}
}

// resource is what the tests read of a returned resource.
type resource struct {
	Kind     string         `json:"kind"`
	Metadata map[string]any `json:"metadata"`
	Spec     map[string]any `json:"spec"`
	Status   map[string]any `json:"status"`
}

func names(t *testing.T, raw []byte) []string {
	t.Helper()
	var rs []resource
	if err := json.Unmarshal(raw, &rs); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	out := []string{}
	for _, r := range rs {
		if _, has := r.Metadata["managedFields"]; has {
			t.Errorf("%s carries metadata.managedFields", r.Metadata["name"])
		}
		out = append(out, r.Metadata["name"].(string))
	}
	return out
}

// addForeign creates a resource as another tool would (no managed-by label,
// server-side apply bookkeeping in managedFields).
func addForeign(t *testing.T, s *apitest.Server, kind, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.Group + "/" + cluster.Version,
		"kind":       kind,
		"metadata": map[string]any{
			"name":          name,
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply"}},
		},
		"spec": spec,
	}}
	api := s.Kube.Validators()
	if kind == cluster.ApplicationKind {
		api = s.Kube.Applications()
	}
	if _, err := api.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestValidatorReads: a validator created through 1.11 appears in 2.0 beside
// those other tools created, sorted, as stored, and its status is what the
// workload controller writes.
func TestValidatorReads(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	ctx := context.Background()

	r, err := s.Platform.ListValidatorsWithResponse(ctx, nil)
	if err != nil || r.StatusCode() != http.StatusOK || string(r.Body) != "[]" {
		t.Fatalf("empty list: got %v %d %s, want 200 []", err, r.StatusCode(), r.Body)
	}
	if c, err := s.Management.CreateValidatorWithResponse(ctx, validatorDto("acme")); err != nil || c.StatusCode() != http.StatusCreated {
		t.Fatalf("1.11 create: %v %s", err, c.Body)
	}
	s.Provisioned(t, "acme")
	addForeign(t, s, cluster.Kind, "zeta", map[string]any{"storageClass": "applied-by-hand"})
	addForeign(t, s, cluster.Kind, "alpha", map[string]any{})
	settle(t, s)

	r, _ = s.Platform.ListValidatorsWithResponse(ctx, nil)
	if got, want := names(t, r.Body), []string{"acme", "alpha", "zeta"}; !slices.Equal(got, want) {
		t.Fatalf("list: got %v, want %v", got, want)
	}

	g, err := s.Platform.GetValidatorWithResponse(ctx, "acme")
	if err != nil || g.StatusCode() != http.StatusOK {
		t.Fatalf("get: %v %s", err, g.Body)
	}
	var acme resource
	if err := json.Unmarshal(g.Body, &acme); err != nil {
		t.Fatal(err)
	}
	labels, _ := acme.Metadata["labels"].(map[string]any)
	if acme.Kind != cluster.Kind || labels[cluster.ManagedByLabel] != cluster.ManagedBy || acme.Spec["config"] == nil {
		t.Fatalf("got %s, want the Validator resource as 1.11 wrote it", g.Body)
	}
	z, _ := s.Platform.GetValidatorWithResponse(ctx, "zeta")
	var zeta resource
	if err := json.Unmarshal(z.Body, &zeta); err != nil || zeta.Spec["storageClass"] != "applied-by-hand" || zeta.Metadata["managedFields"] != nil {
		t.Fatalf("foreign validator: got %s, want its spec, without managedFields", z.Body)
	}

	// The status as the cache's typed Validator encodes it (a false
	// databaseReady is omitted, as the workload controller writes it; its
	// fields in the type's order).
	for _, tc := range []struct {
		phase         domain.Phase
		databaseReady bool
		want          string
	}{
		{domain.PhasePending, false, `{"phase":"PENDING"}`},
		{domain.PhaseRunning, true, `{"phase":"RUNNING","databaseReady":true}`},
		{domain.PhaseCompleted, true, `{"phase":"COMPLETED","databaseReady":true}`},
	} {
		if err := s.Kube.SetStatus(ctx, "acme", tc.phase, tc.databaseReady); err != nil {
			t.Fatal(err)
		}
		st, err := s.Platform.GetValidatorStatusWithResponse(ctx, "acme")
		if err != nil || st.StatusCode() != http.StatusOK || string(st.Body) != tc.want {
			t.Fatalf("status %s: got %v %d %s, want %s", tc.phase, err, st.StatusCode(), st.Body, tc.want)
		}
	}

	// Chart mode's status: the release namespace and the charts, read as
	// stored (the client checks the answers against the contract).
	charts := map[string]any{"name": "splice-validator", "reference": "oci://registry.example.test/helm/splice-validator",
		"version": "0.7.3", "digest": "sha256:" + strings.Repeat("ab", 32)}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := s.Kube.Validators().Get(ctx, "acme", metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.Object["status"] = map[string]any{"phase": "PENDING", "namespace": "validators-acme-0123456789ab", "charts": []any{charts}}
		_, err = s.Kube.Validators().UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"phase":"PENDING","namespace":"validators-acme-0123456789ab","charts":[{"name":"splice-validator","reference":"oci://registry.example.test/helm/splice-validator","version":"0.7.3","digest":"sha256:` + strings.Repeat("ab", 32) + `"}]}`
	apitest.Eventually(t, 10*time.Second, "chart mode's status", func() error {
		st, err := s.Platform.GetValidatorStatusWithResponse(ctx, "acme")
		if err != nil || st.StatusCode() != http.StatusOK || string(st.Body) != want {
			return fmt.Errorf("got %v %d %s, want %s", err, st.StatusCode(), st.Body, want)
		}
		return nil
	})

	// Deleted by another tool: gone from 2.0 too.
	if err := s.Kube.Validators().Delete(ctx, "zeta", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, 10*time.Second, "deleted validator", func() error {
		if g, _ := s.Platform.GetValidatorWithResponse(ctx, "zeta"); g.StatusCode() != http.StatusNotFound || g.JSON404 == nil || g.JSON404.Status != 404 {
			return fmt.Errorf("got %d %s, want 404 in 2.0's shape", g.StatusCode(), g.Body)
		}
		return nil
	})
	if st, _ := s.Platform.GetValidatorStatusWithResponse(ctx, "zeta"); st.StatusCode() != http.StatusNotFound {
		t.Fatalf("status of deleted: got %d, want 404", st.StatusCode())
	}
}

// TestApplicationReads: every Application of the namespace, its status, and
// the metrics of its pods on the simulated node.
func TestApplicationReads(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	ctx := context.Background()
	addForeign(t, s, cluster.ApplicationKind, "api-gateway", map[string]any{"image": "gw:1", "replicas": int64(1)})
	addForeign(t, s, cluster.ApplicationKind, "idle", map[string]any{"replicas": int64(0)})

	settle(t, s)
	r, err := s.Platform.ListApplicationsWithResponse(ctx, nil)
	if err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("list: %v %s", err, r.Body)
	}
	if got, want := names(t, r.Body), []string{"api-gateway", "idle", nodesim.SampleApplication}; !slices.Equal(got, want) {
		t.Fatalf("list: got %v, want %v", got, want)
	}
	apitest.Eventually(t, 20*time.Second, "the simulated node runs the applications' pods", func() error {
		st, err := s.Platform.GetApplicationStatusWithResponse(ctx, "api-gateway")
		if err != nil || st.StatusCode() != http.StatusOK || string(st.Body) != `{"phase":"Running","replicas":1}` {
			return fmt.Errorf("status: got %v %s, want the node's", err, st.Body)
		}
		m, err := s.Platform.ListApplicationMetricsWithResponse(ctx)
		if err != nil || m.JSON200 == nil {
			return fmt.Errorf("metrics: %v %s", err, m.Body)
		}
		for _, a := range *m.JSON200 {
			if a.Name == nodesim.SampleApplication && (a.Cpu.UsageMillicores == nil || *a.Cpu.RequestMillicores != 500) {
				return fmt.Errorf("sample-app's two pods not measured yet: %s", m.Body)
			}
		}
		return nil
	})

	m, err := s.Platform.ListApplicationMetricsWithResponse(ctx)
	if err != nil || m.StatusCode() != http.StatusOK || m.JSON200 == nil || len(*m.JSON200) != 3 {
		t.Fatalf("metrics: %v %s", err, m.Body)
	}
	byName := map[string]int{}
	for i, a := range *m.JSON200 {
		byName[a.Name] = i
		if !a.MetricsAvailable || a.Namespace != s.Kube.Namespace {
			t.Errorf("%s: got available %v namespace %q, want true, %s", a.Name, a.MetricsAvailable, a.Namespace, s.Kube.Namespace)
		}
	}
	sample := (*m.JSON200)[byName[nodesim.SampleApplication]]
	// Two pods of one container each: 250m/256Mi requested, 1 CPU/1Gi limit.
	if got := []any{*sample.Cpu.RequestMillicores, *sample.Cpu.LimitMillicores, *sample.Memory.RequestBytes, *sample.Memory.LimitBytes}; !slices.Equal(got, []any{int64(500), int64(2000), int64(512 << 20), int64(2 << 30)}) {
		t.Errorf("sample-app requests and limits: got %v", got)
	}
	if u := sample.Cpu.UsageMillicores; u == nil || *u < 100 || *u > 350 {
		t.Errorf("sample-app CPU usage: got %v, want 20–70%% of 500m", u)
	}
	if u := sample.Memory.UsageBytes; u == nil || *u < 256<<20 || *u > 384<<20 {
		t.Errorf("sample-app memory usage: got %v, want 50–70%% of 512Mi", u)
	}
	idle := (*m.JSON200)[byName["idle"]]
	if idle.Cpu.UsageMillicores != nil || idle.Cpu.RequestMillicores != nil || idle.Memory.LimitBytes != nil {
		t.Errorf("idle (no pods): got %+v, want nulls", idle)
	}
	if !json.Valid(m.Body) || !containsNull(m.Body) {
		t.Errorf("nulls must be explicit: %s", m.Body)
	}

	one, err := s.Platform.GetApplicationMetricsWithResponse(ctx, "api-gateway")
	if err != nil || one.JSON200 == nil || *one.JSON200.Cpu.RequestMillicores != 250 || one.JSON200.Name != "api-gateway" {
		t.Fatalf("one application's metrics: %v %s", err, one.Body)
	}

	// Removed application: its pods go with it, and it is 404.
	if err := s.Kube.Applications().Delete(ctx, "api-gateway", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, 20*time.Second, "the deleted application and its pods", func() error {
		for _, code := range []int{
			mustStatus(s.Platform.GetApplicationWithResponse(ctx, "api-gateway")),
			mustStatus(s.Platform.GetApplicationStatusWithResponse(ctx, "api-gateway")),
			mustStatus(s.Platform.GetApplicationMetricsWithResponse(ctx, "api-gateway")),
		} {
			if code != http.StatusNotFound {
				return fmt.Errorf("got %d, want 404", code)
			}
		}
		pods, err := s.Kube.Core.CoreV1().Pods(s.Kube.Namespace).List(ctx, metav1.ListOptions{LabelSelector: cluster.InstanceLabel + "=api-gateway"})
		if err != nil || len(pods.Items) != 0 {
			return fmt.Errorf("pods: got %v %d, want none", err, len(pods.Items))
		}
		return nil
	})
}

func containsNull(b []byte) bool { return json.Valid(b) && string(b) != "" && bytesContains(b, `null`) }

func bytesContains(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}

func mustStatus[R interface{ StatusCode() int }](r R, err error) int {
	if err != nil {
		return 0
	}
	return r.StatusCode()
}
