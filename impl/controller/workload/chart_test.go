package workload_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/controller/workload/workloadtest"
)

// chartMode starts the controller in chart mode with the made-up release
// (workloadtest.Charts) in a Manager of its own (startProcess), and
// creates the Validator (apart from the shared controller) at version. It
// stops with the test.
func chartMode(t *testing.T, version string, before ...func(*v1alpha1.Validator)) (*v1alpha1.Validator, *workloadtest.Charts) {
	t.Helper()
	v := chartValidator(t, version, before...)
	charts := &workloadtest.Charts{}
	startProcess(t, v.Namespace, charts)
	return v, charts
}

// chartValidator creates a Validator of chart mode (apart from the shared
// controller) at version.
func chartValidator(t *testing.T, version string, before ...func(*v1alpha1.Validator)) *v1alpha1.Validator {
	t.Helper()
	v := create(t, func(v *v1alpha1.Validator) {
		v.Labels = map[string]string{apart: "true"}
		v.Spec.Config.ImageTag = version
		v.Spec.ExternalDatabase = true
		v.Spec.Config.Cluster.DisabledWallet = ptr.To(true)
	})
	for _, b := range before {
		b(v)
	}
	return v
}

func releaseKey(v *v1alpha1.Validator, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: workload.ReleaseNamespace(v), Name: name}
}

// image is the image of the release's Deployment of component.
func image(ctx context.Context, v *v1alpha1.Validator, component string) (string, error) {
	var d appsv1.Deployment
	if err := apiServer.Get(ctx, releaseKey(v, component), &d); err != nil {
		return "", err
	}
	return d.Spec.Template.Spec.Containers[0].Image, nil
}

// rendered waits until v's status names version of the release, Rendered.
func rendered(t *testing.T, v *v1alpha1.Validator, version string) *v1alpha1.Validator {
	t.Helper()
	var cur v1alpha1.Validator
	eventually(t, "rendered at "+version, func(ctx context.Context) error {
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionRendered)
		if c == nil || c.Status != metav1.ConditionTrue || cur.Status.ObservedGeneration != cur.Generation ||
			len(cur.Status.Charts) != 1 || cur.Status.Charts[0].Version != version {
			return fmt.Errorf("status %+v", cur.Status)
		}
		return nil
	})
	return &cur
}

func TestChartModeRendersIntoReleaseNamespace(t *testing.T) {
	v, _ := chartMode(t, workloadtest.VersionA)
	ctx := context.Background()
	ns := workload.ReleaseNamespace(v)
	cur := rendered(t, v, workloadtest.VersionA)
	want := v1alpha1.ChartRef{Name: "release", Reference: workloadtest.Reference, Version: workloadtest.VersionA, Digest: workloadtest.Digest(workloadtest.VersionA)}
	if cur.Status.Namespace != ns || cur.Status.Charts[0] != want {
		t.Errorf("status namespace %q charts %+v, want %q %+v", cur.Status.Namespace, cur.Status.Charts, ns, want)
	}
	if !controllerutil.ContainsFinalizer(cur, workload.ReleaseFinalizer) {
		t.Errorf("finalizers %v, want %s", cur.Finalizers, workload.ReleaseFinalizer)
	}
	var namespace corev1.Namespace
	if err := apiServer.Get(ctx, types.NamespacedName{Name: ns}, &namespace); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{workload.ValidatorLabel: v.Name, workload.ValidatorNamespaceLabel: v.Namespace, workload.ManagedByLabel: workload.ManagedBy}
	has := func(what string, got map[string]string) {
		for k, val := range labels {
			if k == workload.ManagedByLabel && strings.HasPrefix(what, "pod") {
				continue // a pod is not applied
			}
			if got[k] != val {
				t.Errorf("%s: labels %v, want %s=%s", what, got, k, val)
			}
		}
	}
	has("namespace", namespace.Labels)
	for _, name := range []string{workload.Participant, workload.ValidatorApp, workloadtest.Extra} {
		var d appsv1.Deployment
		if err := apiServer.Get(ctx, releaseKey(v, name), &d); err != nil {
			t.Fatalf("Deployment %s: %v", name, err)
		}
		has("Deployment "+name, d.Labels)
		has("pod template of "+name, d.Spec.Template.Labels)
		if len(d.OwnerReferences) != 0 {
			t.Errorf("Deployment %s: owners %+v, want none (another namespace than the Validator's)", name, d.OwnerReferences)
		}
	}
	for _, name := range []string{workload.Participant, workload.ValidatorApp, workloadtest.Kept} {
		var s corev1.Service
		if err := apiServer.Get(ctx, releaseKey(v, name), &s); err != nil {
			t.Errorf("Service %s: %v", name, err)
		}
	}
	if err := apiServer.Get(ctx, releaseKey(v, workloadtest.Dump), &corev1.PersistentVolumeClaim{}); err != nil {
		t.Errorf("claim: %v", err)
	}
	// Nothing in the Validator's own namespace.
	var ds appsv1.DeploymentList
	if err := apiServer.List(ctx, &ds, client.InNamespace(v.Namespace)); err != nil || len(ds.Items) != 0 {
		t.Errorf("Deployments in the Validator's namespace: %d, %v", len(ds.Items), err)
	}
	// Status from the same rules: the participant and the validator app
	// not available yet.
	if cur.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("phase %s, want PENDING", cur.Status.Phase)
	}
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionParticipantReady); c == nil ||
		!strings.Contains(c.Message, "Deployment "+workload.Participant) {
		t.Errorf("ParticipantReady %+v, want the release's Deployment named", c)
	}
}

// A Deployment deleted by hand in the release namespace comes back: its
// deletion queues its Validator by label.
func TestChartModeRestoresDeletedDeployment(t *testing.T) {
	v, _ := chartMode(t, workloadtest.VersionA)
	rendered(t, v, workloadtest.VersionA)
	ctx := context.Background()
	var d appsv1.Deployment
	if err := apiServer.Get(ctx, releaseKey(v, workload.ValidatorApp), &d); err != nil {
		t.Fatal(err)
	}
	if err := apiServer.Delete(ctx, &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Deployment back", func(ctx context.Context) error {
		var back appsv1.Deployment
		if err := apiServer.Get(ctx, releaseKey(v, workload.ValidatorApp), &back); err != nil {
			return err
		}
		if back.UID == d.UID {
			return fmt.Errorf("still the deleted one")
		}
		return nil
	})
}

// A restart over a release that is what the controller would make writes
// nothing: each object, a ConfigMap too (which the cache holds as
// metadata), is compared with the cache before it is applied.
func TestChartModeRestartWritesNothing(t *testing.T) {
	v := chartValidator(t, workloadtest.VersionA)
	first := startProcess(t, v.Namespace, &workloadtest.Charts{})
	rendered(t, v, workloadtest.VersionA)
	if err := apiServer.Get(context.Background(), releaseKey(v, workloadtest.Settings), &corev1.ConfigMap{}); err != nil {
		t.Fatalf("ConfigMap: %v", err)
	}
	first.quiet(t)
	first.stop()

	second := startProcess(t, v.Namespace, &workloadtest.Charts{})
	second.quiet(t)
	if n := second.writes.Load(); n != 0 {
		t.Fatalf("a restart with nothing changed wrote %d times (%v), want 0", n, second.wrote())
	}
}

// edit sets v's imageTag to version.
func edit(t *testing.T, v *v1alpha1.Validator, version string) {
	t.Helper()
	eventually(t, "edit imageTag", func(ctx context.Context) error {
		var cur v1alpha1.Validator
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		cur.Spec.Config.ImageTag = version
		return apiServer.Update(ctx, &cur)
	})
}

// An upgrade applies the new version and prunes what it no longer renders
// but what is annotated keep; a version that cannot be rendered leaves the
// running one in place, PENDING with the render's reason, retried with
// backoff, until a version renders again.
func TestChartModeUpgrade(t *testing.T) {
	v, charts := chartMode(t, workloadtest.VersionA)
	rendered(t, v, workloadtest.VersionA)
	edit(t, v, workloadtest.VersionB)
	rendered(t, v, workloadtest.VersionB)
	ctx := context.Background()
	eventually(t, "extra pruned", func(ctx context.Context) error {
		if err := apiServer.Get(ctx, releaseKey(v, workloadtest.Extra), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Deployment %s: %v", workloadtest.Extra, err)
		}
		return nil
	})
	if err := apiServer.Get(ctx, releaseKey(v, workloadtest.Kept), &corev1.Service{}); err != nil {
		t.Errorf("Service %s annotated keep: %v", workloadtest.Kept, err)
	}
	if img, err := image(ctx, v, workload.Participant); err != nil || img != workloadtest.Image(workload.Participant, workloadtest.VersionB) {
		t.Errorf("participant image %s, %v", img, err)
	}

	before, failed := charts.Calls(), time.Now()
	edit(t, v, "9.9.9")
	cur := waitCondition(t, v, v1alpha1.ConditionRendered, workloadtest.ReasonUnavailable, workloadtest.Reference+":9.9.9")
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionRendered); c.Status != metav1.ConditionFalse {
		t.Errorf("Rendered %+v, want False", c)
	}
	cur = waitPhase(t, v, v1alpha1.PhasePending)
	if len(cur.Status.Charts) != 1 || cur.Status.Charts[0].Version != workloadtest.VersionB {
		t.Errorf("charts %+v, want the running version's", cur.Status.Charts)
	}
	// Retried, spaced out: 100ms, 200ms, 400ms, 800ms, then every second
	// (RenderBackoff, MaxRenderBackoff). Events (the status the failure
	// wrote, the cache's resync) add renders of their own, which count
	// as failures too: six renders take at least the first three waits,
	// 700ms, where a retry without backoff takes milliseconds.
	eventually(t, "render retried", func(context.Context) error {
		if n := charts.Calls() - before; n < 6 {
			return fmt.Errorf("%d renders", n)
		}
		return nil
	})
	if took := time.Since(failed); took < 700*time.Millisecond {
		t.Errorf("6 renders in %s: not backing off", took)
	}
	if img, err := image(ctx, v, workload.Participant); err != nil || img != workloadtest.Image(workload.Participant, workloadtest.VersionB) {
		t.Errorf("participant image %s, %v: want the running version kept", img, err)
	}
	edit(t, v, workloadtest.VersionB)
	rendered(t, v, workloadtest.VersionB)
}

// A version that cannot be rendered: PENDING with the reason, and nothing
// applied, not even the namespace.
func TestChartModeUnavailableVersion(t *testing.T) {
	v, _ := chartMode(t, "9.9.9")
	cur := waitCondition(t, v, v1alpha1.ConditionRendered, workloadtest.ReasonUnavailable, "not found in the registry")
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != workloadtest.ReasonUnavailable {
		t.Errorf("Ready %+v, want False with the render's reason", c)
	}
	if cur.Status.Phase != v1alpha1.PhasePending || cur.Status.Namespace != "" || len(cur.Status.Charts) != 0 {
		t.Errorf("status %+v, want PENDING, no namespace nor charts", cur.Status)
	}
	err := apiServer.Get(context.Background(), types.NamespacedName{Name: workload.ReleaseNamespace(v)}, &corev1.Namespace{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("release namespace: %v, want not found", err)
	}
}

// Deleting the Validator deletes the workloads of its release namespace
// but not the claims, which hold data, nor the namespace holding them;
// then the finalizer goes and the Validator with it.
func TestChartModeDeletion(t *testing.T) {
	v, _ := chartMode(t, workloadtest.VersionA)
	rendered(t, v, workloadtest.VersionA)
	ctx := context.Background()
	ns := workload.ReleaseNamespace(v)
	var claims corev1.PersistentVolumeClaimList
	if err := apiServer.List(ctx, &claims, client.InNamespace(ns)); err != nil || len(claims.Items) == 0 {
		t.Fatalf("claims before the deletion: %v %d", err, len(claims.Items))
	}
	if err := apiServer.Delete(ctx, v); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Validator gone", func(ctx context.Context) error {
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &v1alpha1.Validator{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("validator: %v", err)
		}
		return nil
	})
	var deployments appsv1.DeploymentList
	if err := apiServer.List(ctx, &deployments, client.InNamespace(ns)); err != nil || len(deployments.Items) != 0 {
		t.Errorf("deployments left: %v %d", err, len(deployments.Items))
	}
	var kept corev1.PersistentVolumeClaimList
	if err := apiServer.List(ctx, &kept, client.InNamespace(ns)); err != nil || len(kept.Items) != len(claims.Items) {
		t.Errorf("claims after the deletion: %v %d, want %d", err, len(kept.Items), len(claims.Items))
	}
	var n corev1.Namespace
	if err := apiServer.Get(ctx, types.NamespacedName{Name: ns}, &n); err != nil || n.DeletionTimestamp != nil {
		t.Errorf("release namespace %s: %v, deleting %v; want kept", ns, err, n.DeletionTimestamp)
	}
}

func TestReleaseNamespace(t *testing.T) {
	validator := func(ns, name string) *v1alpha1.Validator {
		return &v1alpha1.Validator{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	long := strings.Repeat("n", 63)
	tests := []struct {
		name       string
		v          *v1alpha1.Validator
		wantPrefix string
	}{
		{"short", validator("validators", "v1"), "validators-v1-"},
		{"long", validator(long, long), strings.Repeat("n", 50) + "-"},
		{"dotted name", validator("ns", "a.b"), "ns-a-b-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := workload.ReleaseNamespace(tc.v)
			if !strings.HasPrefix(got, tc.wantPrefix) || len(got) != len(tc.wantPrefix)+12 || len(got) > 63 {
				t.Errorf("got %q, want %q and 12 hex digits, at most 63 characters", got, tc.wantPrefix)
			}
			if again := workload.ReleaseNamespace(tc.v.DeepCopy()); again != got {
				t.Errorf("not deterministic: %q, then %q", got, again)
			}
		})
	}
	// Read alike, named apart.
	a, b := workload.ReleaseNamespace(validator("a-b", "c")), workload.ReleaseNamespace(validator("a", "b-c"))
	if a == b || !strings.HasPrefix(a, "a-b-c-") || !strings.HasPrefix(b, "a-b-c-") {
		t.Errorf("a-b/c %q and a/b-c %q", a, b)
	}
}

// A validator whose built-in workloads run in its own namespace is not
// moved into a release namespace when chart mode comes on: nothing is
// applied, Rendered says why, until they are deleted.
func TestChartModeDoesNotMoveRunningWorkloads(t *testing.T) {
	var builtIn *appsv1.Deployment
	v, _ := chartMode(t, workloadtest.VersionA, func(v *v1alpha1.Validator) {
		for _, obj := range workload.Desired(v) {
			if d, ok := obj.(*appsv1.Deployment); ok && d.Labels[workload.ComponentLabel] == workload.Participant {
				builtIn = d
			}
		}
		if err := apiServer.Create(context.Background(), builtIn); err != nil {
			t.Fatal(err)
		}
	})
	cur := waitCondition(t, v, v1alpha1.ConditionRendered, workload.ReasonNamespaceMoved, "run in namespace "+v.Namespace)
	if cur.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("phase %s, want PENDING", cur.Status.Phase)
	}
	ctx := context.Background()
	err := apiServer.Get(ctx, types.NamespacedName{Name: workload.ReleaseNamespace(v)}, &corev1.Namespace{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("release namespace: %v, want none while the built-in workloads run", err)
	}
	if err := apiServer.Delete(ctx, builtIn); err != nil {
		t.Fatal(err)
	}
	cur = rendered(t, v, workloadtest.VersionA)
	if cur.Status.Namespace != workload.ReleaseNamespace(v) {
		t.Errorf("status namespace %q, want the release namespace", cur.Status.Namespace)
	}
}
