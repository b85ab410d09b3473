package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/controller/workload/splicefacts"
	"github.com/validator-manager/validator-manager/impl/podrefs"
)

// readmePayload is the body of the README's curl create, as a newcomer
// copies it; the docs page's createValidator example must be the same
// validator (both name validator-1, so a newcomer creates it once).
func readmePayload(t *testing.T) []byte {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)curl [^\n]*/api/validators -d '(\{.*?\})'`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no curl create of /api/validators")
	}
	var fromReadme, fromDocs any
	if err := json.Unmarshal(m[1], &fromReadme); err != nil {
		t.Fatalf("the README's payload is not JSON: %v", err)
	}
	raw, err := os.ReadFile("../../openapi/management-1.11.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, item := range doc.Paths {
		for _, rawOp := range item {
			var op struct {
				OperationID string `json:"operationId"`
				RequestBody struct {
					Content map[string]struct {
						Example any `json:"example"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			// A path's parameters are a list, not an operation.
			if json.Unmarshal(rawOp, &op) == nil && op.OperationID == "createValidator" {
				fromDocs = op.RequestBody.Content["application/json"].Example
			}
		}
	}
	a, _ := json.Marshal(fromReadme)
	b, _ := json.Marshal(fromDocs)
	if !bytes.Equal(a, b) {
		t.Fatalf("the README's create %s is not the docs page's example %s", a, b)
	}
	return m[1]
}

// createdUser is release 1.11's createdUser as a create answers it.
type createdUser struct {
	ID, Username, TemporaryPassword string
}

// createRaw posts body to release 1.11's create as curl does and returns
// the created user the answer carries: its username and temporary
// password, never an id (the identity provider assigns it after the
// answer).
func createRaw(t *testing.T, base, token string, body []byte) createdUser {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/validators", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		CreatedUser createdUser `json:"createdUser"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated ||
		out.CreatedUser.Username == "" || out.CreatedUser.TemporaryPassword == "" || out.CreatedUser.ID != "" {
		t.Fatalf("create: %d %v %+v, want 201 with the created user's name and password, no id", resp.StatusCode, err, out)
	}
	return out.CreatedUser
}

// getValidator reads the Validator resource.
func getValidator(t *testing.T, dyn dynamic.Interface, name string) *v1alpha1.Validator {
	t.Helper()
	u, err := dyn.Resource(cluster.ValidatorResource).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return toValidator(t, u)
}

func toValidator(t *testing.T, u *unstructured.Unstructured) *v1alpha1.Validator {
	t.Helper()
	v := &v1alpha1.Validator{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// pods are the validator's live pod templates by component.
func livePods(t *testing.T, core kubernetes.Interface, name string) map[string]corev1.PodSpec {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: workload.ValidatorLabel + "=" + name}
	out := map[string]corev1.PodSpec{}
	ds, err := core.AppsV1().Deployments("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		out[d.Labels[workload.ComponentLabel]] = d.Spec.Template.Spec
	}
	ss, err := core.AppsV1().StatefulSets("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss.Items {
		out[s.Labels[workload.ComponentLabel]] = s.Spec.Template.Spec
	}
	return out
}

// checkSpliceWorkloads checks the live workloads of validator name, made
// from imageRepo and tag with the created wallet user, against the facts
// table: Splice images, every referenced Secret and key present, the apps'
// database user and database the ones PostgreSQL's pg-init creates, every
// required setting non-empty, the UIs as their image's user, the dump path
// on a claim that exists, and the operator wallet user the created user.
func checkSpliceWorkloads(t *testing.T, core kubernetes.Interface, name, imageRepo, tag, walletUserID string) {
	ctx := context.Background()
	f, err := splicefacts.Load("../../impl/controller/workload/testdata/splice-requirements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pods := livePods(t, core, name)
	secretValue := func(ref string) (string, bool) {
		secretName, key, _ := strings.Cut(strings.TrimPrefix(ref, "secret:"), "/")
		s, err := core.CoreV1().Secrets("default").Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return "", false
		}
		v, ok := s.Data[key]
		return string(v), ok
	}
	value := func(c corev1.Container, env string) string {
		v, _ := splicefacts.Resolve(c, env)
		if strings.HasPrefix(v, "secret:") {
			v, _ = secretValue(v)
		}
		return v
	}
	pgUser := ""
	if pg, ok := pods[workload.Postgres]; ok {
		pgUser = value(pg.Containers[0], "POSTGRES_USER")
	}
	for _, img := range f.Images {
		spec, ok := pods[img.Workload]
		if !ok {
			t.Errorf("%s: no Deployment or StatefulSet", img.Workload)
			continue
		}
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			splice := imageRepo + "/" + img.Image + ":" + tag
			if c.Image != splice && !isPostgres(c.Image) {
				t.Errorf("%s/%s: image %q, want %s or a postgres image", img.Workload, c.Name, c.Image, splice)
			}
		}
		checkRefs(t, core, "default", img.Workload, spec)
		c := spec.Containers[0]
		for _, r := range img.Required {
			if v := value(c, r.Env); v == "" && !r.MayBeEmpty {
				t.Errorf("%s: required %s is empty", img.Workload, r.Env)
			}
		}
		if img.User.ImageUser && (spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil || c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil) {
			t.Errorf("%s: a forced user (%+v, %+v), want its image's", img.Workload, spec.SecurityContext, c.SecurityContext)
		}
		checkLiveDatabase(t, img, spec, pgUser)
		checkLiveClaims(t, core, img, spec)
	}
	if got := value(pods[workload.ValidatorApp].Containers[0], "SPLICE_APP_VALIDATOR_WALLET_USER_NAME"); got != walletUserID {
		t.Errorf("operator wallet user %q, want the created user's id %q", got, walletUserID)
	}
}

// checkRefs: every Secret and ConfigMap the pod template spec of workload
// reads (not optionally) exists in namespace ns, a Secret with every key read.
func checkRefs(t *testing.T, core kubernetes.Interface, ns, workload string, spec corev1.PodSpec) {
	t.Helper()
	ctx := context.Background()
	for _, ref := range podrefs.All(&spec) {
		if ref.Optional {
			continue
		}
		s, err := core.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if ref.Kind != podrefs.Secret {
			_, err = core.CoreV1().ConfigMaps(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		}
		if err != nil {
			t.Errorf("%s: %s %s: %v", workload, ref.Kind, ref.Name, err)
			continue
		}
		for _, k := range ref.Keys {
			if _, ok := s.Data[k]; ref.Kind == podrefs.Secret && !ok {
				t.Errorf("%s: Secret %s has no key %s", workload, ref.Name, k)
			}
		}
	}
}

// isPostgres: PostgreSQL's image, any registry or tag.
func isPostgres(ref string) bool {
	name, _, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	return name == "postgres" && apitest.ParseImageReference(ref) == nil
}

// checkLiveDatabase: the app connects as the user PostgreSQL creates, to
// the database an init container of its pod creates as that user.
func checkLiveDatabase(t *testing.T, img splicefacts.Image, spec corev1.PodSpec, pgUser string) {
	t.Helper()
	if img.Database == nil {
		return
	}
	c := spec.Containers[0]
	user, db := img.Database.User.In(c), img.Database.Database.In(c)
	if user == "" || user != pgUser {
		t.Errorf("%s: database user %q, want PostgreSQL's %q", img.Workload, user, pgUser)
	}
	if !slices.ContainsFunc(spec.InitContainers, func(ic corev1.Container) bool {
		n, _ := splicefacts.Resolve(ic, "DATABASE_NAME")
		u, _ := splicefacts.Resolve(ic, "PGUSER")
		return n == db && u == user && strings.Contains(strings.Join(ic.Command, " "), "CREATE DATABASE")
	}) {
		t.Errorf("%s: no init container creates database %q as %q", img.Workload, db, user)
	}
}

// checkLiveClaims: every claim mount of the facts is a volume of a claim that exists.
func checkLiveClaims(t *testing.T, core kubernetes.Interface, img splicefacts.Image, spec corev1.PodSpec) {
	t.Helper()
	c := spec.Containers[0]
	for _, m := range img.Mounts {
		if !m.Claim {
			continue
		}
		i := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == m.Path })
		if i < 0 {
			t.Errorf("%s: nothing mounted at %s", img.Workload, m.Path)
			continue
		}
		j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
		if j < 0 || spec.Volumes[j].PersistentVolumeClaim == nil {
			t.Errorf("%s: %s is not a claim", img.Workload, m.Path)
			continue
		}
		claim := spec.Volumes[j].PersistentVolumeClaim.ClaimName
		if _, err := core.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), claim, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: claim %s at %s: %v", img.Workload, claim, m.Path, err)
		}
	}
}

// started: RUNNING, or COMPLETED (every workload available), which follows it.
func started(p v1alpha1.Phase) bool {
	return p == v1alpha1.PhaseRunning || p == v1alpha1.PhaseCompleted
}

// watchPhases records the phases the Validator resource name goes through
// from now on; stop ends the watch and fails t when the phase went back
// from started (RUNNING or COMPLETED) to another (a validator left alone
// must not roll its workloads again once they were available), or when the
// watch saw it end anywhere but started (a watch that ended early or saw
// nothing checks nothing; the caller stops it once it saw the validator
// started).
func watchPhases(t *testing.T, dyn dynamic.Interface, name string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := dyn.Resource(cluster.ValidatorResource).Namespace("default").Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() {
		var seen []string
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				st, _, _ := unstructured.NestedString(u.Object, "status", "phase")
				if len(seen) == 0 || seen[len(seen)-1] != st {
					seen = append(seen, st)
				}
			}
		}
		done <- seen
	}()
	return func() {
		t.Helper()
		cancel()
		w.Stop()
		seen := <-done
		if len(seen) == 0 || !started(v1alpha1.Phase(seen[len(seen)-1])) {
			t.Errorf("the watch of validator %s saw the phases %v, not ending started: it did not see what it checks", name, seen)
		}
		for i := 1; i < len(seen); i++ {
			if started(v1alpha1.Phase(seen[i-1])) && !started(v1alpha1.Phase(seen[i])) {
				t.Errorf("validator %s went back from %s to %s with nothing changed (phases %v): its workloads rolled out again", name, seen[i-1], seen[i], seen)
			}
		}
	}
}

// checkRolledOutOnce: each of the validator's Deployments is at its first
// revision: nothing changed its pod template after it was made (a new
// validator's workloads roll out once, not again when the resource's
// spec.secrets or the cache's Secrets follow).
func checkRolledOutOnce(t *testing.T, core kubernetes.Interface, name string) {
	t.Helper()
	ds, err := core.AppsV1().Deployments("default").List(context.Background(), metav1.ListOptions{LabelSelector: workload.ValidatorLabel + "=" + name})
	if err != nil || len(ds.Items) == 0 {
		t.Fatalf("the Deployments of %s: %v, %d", name, err, len(ds.Items))
	}
	for _, d := range ds.Items {
		if rev := d.Annotations["deployment.kubernetes.io/revision"]; rev != "1" {
			t.Errorf("Deployment %s is at revision %s, want 1: its pod template changed after it was made", d.Name, rev)
		}
	}
}

// checkSecretLossReported deletes the validator's database Secret by hand:
// a watch on the Validator, started before, sees it leave RUNNING (or
// COMPLETED) with a condition naming the Secret, then back once the controller has
// written the Secret back, with the password the database was initialised
// with (derived, docs/decisions.md).
func checkSecretLossReported(t *testing.T, core kubernetes.Interface, dyn dynamic.Interface, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	secretName := name + "-database"
	old, err := core.CoreV1().Secrets("default").Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := getValidator(t, dyn, name)
	w, err := dyn.Resource(cluster.ValidatorResource).Namespace("default").Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: v.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The controller writes the Secret back within milliseconds; a quota
	// that admits no new Secret holds it off (the API server refuses its
	// create) until the status has said what is missing.
	lift := holdSecrets(t, core)
	defer lift()
	if err := core.CoreV1().Secrets("default").Delete(ctx, secretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reported := false
	for ev := range w.ResultChan() {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		st := toValidator(t, u).Status
		if !reported && !started(st.Phase) {
			reported = slices.ContainsFunc(st.Conditions, func(c metav1.Condition) bool {
				return c.Status == metav1.ConditionFalse && c.Reason == "SecretNotFound" && strings.Contains(c.Message, `secret "`+secretName+`" not found`)
			})
			if !reported {
				t.Fatalf("phase %s with conditions %+v, want a condition SecretNotFound naming %s", st.Phase, st.Conditions, secretName)
			}
			lift()
		}
		if reported && started(st.Phase) {
			s, err := core.CoreV1().Secrets("default").Get(ctx, secretName, metav1.GetOptions{})
			if err != nil || s.UID == old.UID || string(s.Data["password"]) != string(old.Data["password"]) {
				t.Fatalf("%s again, but the Secret is %v (%v), want it written anew with the same password", st.Phase, s != nil && s.UID != old.UID, err)
			}
			return
		}
	}
	t.Fatalf("the watch ended (reported: %t): %v", reported, ctx.Err())
}

// holdSecrets makes the namespace's quota admit no new Secret (its status
// written here: the embedded default runs no quota controller); lift
// removes the quota (again: a no-op).
func holdSecrets(t *testing.T, core kubernetes.Interface) (lift func()) {
	t.Helper()
	ctx := context.Background()
	none := corev1.ResourceList{corev1.ResourceSecrets: *resource.NewQuantity(0, resource.DecimalSI)}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "e2e-hold-secrets", Namespace: "default"}, Spec: corev1.ResourceQuotaSpec{Hard: none}}
	q, err := core.CoreV1().ResourceQuotas("default").Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: none, Used: none}
	if _, err := core.CoreV1().ResourceQuotas("default").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func() { _ = core.CoreV1().ResourceQuotas("default").Delete(ctx, q.Name, metav1.DeleteOptions{}) }
}
