package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/charts"
	"github.com/validator-manager/validator-manager/impl/charts/chartstest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/controller/workload/splicefacts"
)

// release is what the test charts render for the README's validator at a
// version (impl/charts/testdata/README.md), by kind and name, each name
// with the chart it comes from; the validator's own PostgreSQL carries no
// chart.
type release map[string]map[string]string

func testRelease(version string) release {
	r := release{
		"Deployment":  {"participant": "splice-participant", "validator-app": "splice-validator"},
		"StatefulSet": {"validator-1-postgres": ""},
		"Service":     {"participant": "splice-participant", "validator-app": "splice-validator", "validator-1-postgres": ""},
		"ConfigMap":   {},
	}
	if version == chartstest.V1 {
		r["Service"]["wallet-web-ui"] = "splice-validator"
	} else {
		r["ConfigMap"]["validator-settings"] = "splice-validator"
	}
	return r
}

// TestChartMode is issue 39's "Done when" on the embedded default, with the
// project's test charts in a registry on 127.0.0.1 as splice.charts: the
// README's validator at version V1 becomes exactly what the charts render
// (and its own PostgreSQL) in a namespace of its own, each object labelled
// with its chart and every Secret and key its pods read present, reaches
// RUNNING on the simulated node, and release 2.0's read names the charts
// with their digests; an edit to V2 prunes what V2 no longer renders and
// applies what it adds; a version the registry lacks leaves its validator
// PENDING with Rendered False, ChartUnavailable; deleting the Validator
// keeps its release namespace and claims, where the Validator made again
// runs. Every response is checked against the
// contract of its release.
func TestChartMode(t *testing.T) {
	reg := chartstest.NewRegistry(t)
	reg.Push(t, chartstest.V1, chartstest.V2)
	mc, pc, core, dyn := serveCharts(t, reg)
	ctx := context.Background()

	// Both at once: the unknown version's validator fails while the other
	// starts.
	const unknown = "0.9.99"
	createChartValidator(t, mc, "validator-1", chartstest.V1)
	createChartValidator(t, mc, "validator-2", unknown)

	t.Run("a version the registry lacks stays PENDING with ChartUnavailable", func(t *testing.T) {
		want := strings.TrimPrefix(reg.Repository, "oci://") + "/splice-"
		var last string
		eventually(t, 60*time.Second, "validator-2 Rendered False, ChartUnavailable, naming "+want, func() bool {
			u, err := dyn.Resource(cluster.ValidatorResource).Namespace("default").Get(ctx, "validator-2", metav1.GetOptions{})
			if err != nil {
				return false
			}
			v := toValidator(t, u)
			c := meta.FindStatusCondition(v.Status.Conditions, v1alpha1.ConditionRendered)
			if c == nil {
				return false
			}
			last = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
			return v.Status.Phase == v1alpha1.PhasePending && c.Status == metav1.ConditionFalse && c.Reason == "ChartUnavailable" &&
				strings.Contains(c.Message, want) && strings.Contains(c.Message, unknown)
		})
		t.Logf("Rendered: %s", last)
		if p := listedPhase(t, mc, "validator-2"); p != managementapi.PENDING {
			t.Errorf("1.11's phase: got %s, want PENDING", p)
		}
	})

	var ns string
	t.Run("the README's validator at "+chartstest.V1+" is what the charts render and runs", func(t *testing.T) {
		ns = waitRelease(t, mc, pc, reg, "validator-1", chartstest.V1)
		checkRelease(t, core, ns, testRelease(chartstest.V1))
		// 1.11 shows the addresses of the release's Services, which the
		// charts name after their release, and 2.0's proxy dials.
		r, err := mc.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: ptr("validator-1")})
		if err != nil || r.JSON200 == nil || len(r.JSON200.Validators) != 1 {
			t.Fatalf("list: %v %s", err, r.Body)
		}
		if got, want := ptrValue(r.JSON200.Validators[0].LedgerApiAddress), "participant."+ns+".svc.cluster.local:5001"; got != want {
			t.Errorf("1.11's ledgerApiAddress: %q, want %q", got, want)
		}
	})
	if ns == "" {
		t.FailNow()
	}

	t.Run("an edit to "+chartstest.V2+" prunes and applies", func(t *testing.T) {
		r, err := mc.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{Name: "validator-1", ImageTag: ptr(chartstest.V2)})
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() != http.StatusOK {
			t.Fatalf("edit: got %d %s, want 200", r.StatusCode(), r.Body)
		}
		if got := waitRelease(t, mc, pc, reg, "validator-1", chartstest.V2); got != ns {
			t.Errorf("namespace after the upgrade: got %s, want %s", got, ns)
		}
		eventually(t, 60*time.Second, "Service wallet-web-ui pruned", func() bool {
			_, err := core.CoreV1().Services(ns).Get(ctx, "wallet-web-ui", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		checkRelease(t, core, ns, testRelease(chartstest.V2))
		// The migration dump's claim is kept (helm.sh/resource-policy: keep).
		if _, err := core.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "migration-dump", metav1.GetOptions{}); err != nil {
			t.Errorf("the migration dump's claim: %v", err)
		}
	})

	// The validator's record stays (release 1.11 has no delete), so the
	// leader makes the Validator again. Its release namespace keeps the
	// claims (the database's, the migration dump's) and so stays: the
	// Validator made again runs there, on the same data.
	t.Run("deleting the Validator keeps its data", func(t *testing.T) {
		n, err := core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before, err := core.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "migration-dump", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old, err := dyn.Resource(cluster.ValidatorResource).Namespace("default").Get(ctx, "validator-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := dyn.Resource(cluster.ValidatorResource).Namespace("default").Delete(ctx, "validator-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "the Validator made again", func() bool {
			v, err := dyn.Resource(cluster.ValidatorResource).Namespace("default").Get(ctx, "validator-1", metav1.GetOptions{})
			return err == nil && v.GetUID() != old.GetUID()
		})
		got, err := core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || got.UID != n.UID || got.DeletionTimestamp != nil {
			t.Fatalf("release namespace %s: %v (deleting %v); want the same, kept", ns, err, got.DeletionTimestamp)
		}
		after, err := core.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "migration-dump", metav1.GetOptions{})
		if err != nil || after.UID != before.UID {
			t.Fatalf("the migration dump's claim: %v, want the same one kept", err)
		}
	})
}

// serveCharts runs `serve` in chart mode with reg as splice.charts until
// the test ends, and returns its clients: release 1.11's and 2.0's, and the
// administrator's of its control plane.
func serveCharts(t *testing.T, reg *chartstest.Registry) (*managementapi.ClientWithResponses, *platformapi.ClientWithResponses, kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	dataDir := t.TempDir()
	s := startServe(t, "--data-dir", dataDir, "--splice.charts", reg.Repository)
	t.Cleanup(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("serve after cancel: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("serve did not shut down")
		}
	})
	token := printedToken(t, s.out.String())
	waitHealthy(t, s.base, s.done)
	mc, pc := contractClients(t, s.base, token)
	rc := adminConfig(t, dataDir)
	return mc, pc, kubernetes.NewForConfigOrDie(rc), dynamic.NewForConfigOrDie(rc)
}

// TestSpliceCharts holds chart mode against Splice's own charts, which the
// project does not hold (issue 39 item 9; docs/decisions.md, "Splice's
// facts and the chart renderer"): VM_TEST_SPLICE_CHARTS_DIR names a
// directory holding splice-participant and splice-validator built as
// Splice's build does (Chart-template.yaml made Chart.yaml,
// values-template.yaml made values.yaml with splice-util-lib's security
// profiles merged in, splice-util-lib copied into each chart's charts/),
// VM_TEST_SPLICE_CHARTS_VERSION their release (0.7.3). Skipped without.
// The README's validator at that version runs on the embedded default, as
// the charts render it: every workload labelled with its chart, every
// Secret and key read present, the facts' images and required settings
// (those the charts' release still passes) set.
func TestSpliceCharts(t *testing.T) {
	dir, version := os.Getenv("VM_TEST_SPLICE_CHARTS_DIR"), os.Getenv("VM_TEST_SPLICE_CHARTS_VERSION")
	if dir == "" || version == "" {
		t.Skip("set VM_TEST_SPLICE_CHARTS_DIR and VM_TEST_SPLICE_CHARTS_VERSION to run against Splice's charts")
	}
	reg := chartstest.NewRegistry(t)
	reg.PushDir(t, dir, version)
	mc, pc, core, _ := serveCharts(t, reg)
	createChartValidator(t, mc, "validator-1", version)
	ns := waitRelease(t, mc, pc, reg, "validator-1", version)
	var payload struct{ ImageRepo string }
	if err := json.Unmarshal(readmePayload(t), &payload); err != nil {
		t.Fatal(err)
	}
	f, err := splicefacts.Load("../../impl/controller/workload/testdata/splice-requirements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Facts of the built-in layout's Splice that this release's charts no
	// longer pass, by design: the participant's database user (none:
	// the image's default cnadmin, chart mode's user) and the migration id
	// (optional since).
	passedNoMore := map[string]bool{"participant/CANTON_PARTICIPANT_POSTGRES_USER": true, "validator-app/ADDITIONAL_CONFIG_MIGRATION_ID": true}
	ctx := context.Background()
	pods := map[string]corev1.PodSpec{}
	ds, err := core.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		if d.Labels[charts.ChartLabel] == "" {
			t.Errorf("Deployment %s: labels %v, want its chart", d.Name, d.Labels)
		}
		pods[d.Labels[workload.ComponentLabel]] = d.Spec.Template.Spec
		checkRefs(t, core, ns, "Deployment "+d.Name, d.Spec.Template.Spec)
	}
	for _, img := range f.Images {
		if img.Workload == workload.Postgres {
			continue // ours, as in the built-in layout (TestEmbeddedDefault)
		}
		spec, ok := pods[img.Workload]
		if !ok {
			t.Errorf("%s: no Deployment labelled %s=%s", img.Workload, workload.ComponentLabel, img.Workload)
			continue
		}
		c := spec.Containers[0]
		if want := payload.ImageRepo + "/" + img.Image + ":" + version; c.Image != want {
			t.Errorf("%s: image %s, want %s", img.Workload, c.Image, want)
		}
		for _, r := range img.Required {
			if v, _ := splicefacts.Resolve(c, r.Env); v == "" && !r.MayBeEmpty && !passedNoMore[img.Workload+"/"+r.Env] {
				t.Errorf("%s: required %s is empty", img.Workload, r.Env)
			}
		}
	}
}

// contractClients are release 1.11's and 2.0's clients at base with token,
// each response checked against its release's contract.
func contractClients(t *testing.T, base, token string) (*managementapi.ClientWithResponses, *platformapi.ClientWithResponses) {
	t.Helper()
	hc := &http.Client{Transport: apitest.NewValidator(t, http.DefaultTransport), Timeout: time.Minute}
	bearer := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	mc, err := managementapi.NewClientWithResponses(base, managementapi.WithHTTPClient(hc), managementapi.WithRequestEditorFn(bearer))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := platformapi.NewClientWithResponses(base, platformapi.WithHTTPClient(hc), platformapi.WithRequestEditorFn(bearer))
	if err != nil {
		t.Fatal(err)
	}
	return mc, pc
}

// createChartValidator creates the README's validator as name at version
// tag.
func createChartValidator(t *testing.T, mc *managementapi.ClientWithResponses, name, tag string) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(readmePayload(t), &body); err != nil {
		t.Fatal(err)
	}
	body["name"], body["imageTag"] = name, tag
	raw, _ := json.Marshal(body)
	r, err := mc.CreateValidatorWithBodyWithResponse(context.Background(), "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode() != http.StatusCreated {
		t.Fatalf("create %s: got %d %s, want 201", name, r.StatusCode(), r.Body)
	}
}

func listedPhase(t *testing.T, mc *managementapi.ClientWithResponses, name string) managementapi.Phase {
	t.Helper()
	r, err := mc.ListValidatorsWithResponse(context.Background(), &managementapi.ListValidatorsParams{Name: ptr(name)})
	if err != nil || r.JSON200 == nil || len(r.JSON200.Validators) != 1 || r.JSON200.Validators[0].Phase == nil {
		return ""
	}
	return *r.JSON200.Validators[0].Phase
}

var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// waitRelease waits until validator name runs (1.11's phase RUNNING or
// COMPLETED) at version, as release 2.0's read shows it: its namespace and
// both charts, each with its reference in reg, the version and a digest;
// and returns the namespace.
func waitRelease(t *testing.T, mc *managementapi.ClientWithResponses, pc *platformapi.ClientWithResponses, reg *chartstest.Registry, name, version string) string {
	t.Helper()
	var last string
	var ns string
	start := time.Now()
	eventually(t, 120*time.Second, name+" running at "+version, func() bool {
		p := listedPhase(t, mc, name)
		r, err := pc.GetValidatorWithResponse(context.Background(), name)
		if err != nil || r.JSON200 == nil || r.JSON200.Status == nil {
			return false
		}
		st := r.JSON200.Status
		last = fmt.Sprintf("phase %s, 2.0's status %s", p, mustJSON(st))
		// The status is of the current generation: an upgrade's edit is
		// not judged by the previous version's phase.
		observed, _ := st.AdditionalProperties["observedGeneration"].(float64)
		if !started(v1alpha1.Phase(p)) || st.Namespace == nil || st.Charts == nil ||
			r.JSON200.Metadata == nil || r.JSON200.Metadata.Generation == nil || int64(observed) != *r.JSON200.Metadata.Generation {
			return false
		}
		got := *st.Charts
		for _, chart := range chartstest.Charts {
			i := slices.IndexFunc(got, func(c platformapi.ChartRef) bool { return c.Name == chart })
			if i < 0 || got[i].Version != version {
				return false
			}
			if ref := reg.Repository + "/" + chart; got[i].Reference != ref || !sha256Digest.MatchString(got[i].Digest) {
				t.Fatalf("chart %s: got %+v, want reference %s and a sha256 digest", chart, got[i], ref)
			}
		}
		if len(got) != len(chartstest.Charts) {
			t.Fatalf("charts: got %+v, want %v", got, chartstest.Charts)
		}
		ns = *st.Namespace
		return true
	}, func() string { return last })
	if ns == "default" || !strings.HasPrefix(ns, "default-"+name+"-") {
		t.Errorf("namespace %q, want one of the validator's own (default-%s-<digest>)", ns, name)
	}
	t.Logf("%s at %s: %s after the request", name, version, time.Since(start).Round(100*time.Millisecond))
	return ns
}

// checkRelease: namespace ns holds exactly want's Deployments,
// StatefulSets and Services (and want's ConfigMaps among its own), each
// labelled with the validator and its chart (none for ours), and every
// Secret and key their pod templates read.
func checkRelease(t *testing.T, core kubernetes.Interface, ns string, want release) {
	t.Helper()
	ctx := context.Background()
	found := release{}
	labels := map[string]map[string]string{}
	pods := map[string]corev1.PodSpec{}
	ds, err := core.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		labels["Deployment/"+d.Name], pods["Deployment/"+d.Name] = d.Labels, d.Spec.Template.Spec
	}
	ss, err := core.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss.Items {
		labels["StatefulSet/"+s.Name], pods["StatefulSet/"+s.Name] = s.Labels, s.Spec.Template.Spec
	}
	svcs, err := core.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		labels["Service/"+s.Name] = s.Labels
	}
	for kind, names := range want {
		if kind != "ConfigMap" {
			continue
		}
		for name := range names {
			if cm, err := core.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				labels["ConfigMap/"+name] = cm.Labels
			}
		}
	}
	for key, l := range labels {
		kind, name, _ := strings.Cut(key, "/")
		if found[kind] == nil {
			found[kind] = map[string]string{}
		}
		found[kind][name] = l[charts.ChartLabel]
		if l[workload.ValidatorLabel] != "validator-1" {
			t.Errorf("%s: labels %v, want %s validator-1", key, l, workload.ValidatorLabel)
		}
	}
	for kind, names := range want {
		if !maps.Equal(found[kind], names) {
			t.Errorf("%ss (name: chart) in %s: got %v, want %v", kind, ns, found[kind], names)
		}
	}
	for key, spec := range pods {
		checkRefs(t, core, ns, key, spec)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func ptrValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
