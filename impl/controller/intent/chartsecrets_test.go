package intent

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	clustergw "github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestChartSecrets: in chart mode the Secrets Splice's charts read appear
// in the release's namespace, with the validator's secret values and its
// auth's public ones; one deleted or stripped of a key by hand comes back
// (the controller watches them); a changed source is copied again.
func TestChartSecrets(t *testing.T) {
	const name = "chart1"
	w, c, k := chartTest(t, name, map[string]map[string]string{
		"-database":        {"password": "pw-1"},
		"-ledger-api-auth": {"client-secret": "cs-1"},
		"-onboarding":      {"secret": "onboard-1"},
	})
	ctx, ns, issuer := context.Background(), chartNamespace, chartIssuer
	v := chartValidator(name, true)
	v.Spec.Config.Cluster.SVSponsorAddress = "http://sv.test"
	v.Spec.Secrets.Onboarding = &v1alpha1.SecretKeyRef{Name: name + "-onboarding", Key: "secret"}
	if err := k.Create(ctx, v); err != nil {
		t.Fatal(err)
	}
	w.record(t, name, true, domain.ValidatorSecrets{})

	release := workload.ReleaseNamespace(v)
	want := map[string]map[string]string{
		workload.ChartDatabaseSecret: {"postgresPassword": "pw-1"},
		workload.ChartLedgerAPIAuthSecret: {"ledger-api-user": "sa-chart1", "audience": "https://ledger.chart1.test",
			"url": issuer + "/.well-known/openid-configuration", "client-id": "chart1-validator-app", "client-secret": "cs-1"},
		workload.ChartOnboardingSecret:   {"secret": "onboard-1"},
		workload.ChartWalletUIAuthSecret: {"url": issuer, "client-id": "chart1-wallet-ui"},
		workload.ChartCNSUIAuthSecret:    {"url": issuer, "client-id": "chart1-ans-ui"},
	}
	// written tells whether the release's namespace holds want, each
	// labelled with the validator.
	written := func() bool {
		for n, data := range want {
			s := &corev1.Secret{}
			if err := k.Get(ctx, types.NamespacedName{Namespace: release, Name: n}, s); err != nil {
				return false
			}
			got := map[string]string{}
			for key, value := range s.Data {
				got[key] = string(value)
			}
			if !maps.Equal(got, data) || s.Labels[workload.ValidatorLabel] != name {
				return false
			}
		}
		return true
	}
	// The resource reaches the cache after the row's first reconcile may
	// have run: ask again until the Secrets are there.
	eventually(t, func() bool { c.Enqueue(name); return written() })
	nsObj := &corev1.Namespace{}
	if err := k.Get(ctx, types.NamespacedName{Name: release}, nsObj); err != nil || nsObj.Labels[workload.ValidatorLabel] != name {
		t.Fatalf("release namespace %s: %v, labels %v; want it labelled with the validator", release, err, nsObj.Labels)
	}

	// Deleted by hand: back without anyone asking.
	if err := k.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: workload.ChartLedgerAPIAuthSecret, Namespace: release}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, written)

	// A key removed by hand: back.
	s := &corev1.Secret{}
	if err := k.Get(ctx, types.NamespacedName{Namespace: release, Name: workload.ChartWalletUIAuthSecret}, s); err != nil {
		t.Fatal(err)
	}
	delete(s.Data, "client-id")
	if err := k.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, written)

	// The database password changes (an edit's value written by the
	// gateway, whose Secret events reach the controller): copied again.
	db := &corev1.Secret{}
	if err := k.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-database"}, db); err != nil {
		t.Fatal(err)
	}
	db.Data["password"] = []byte("pw-2")
	if err := k.Update(ctx, db); err != nil {
		t.Fatal(err)
	}
	want[workload.ChartDatabaseSecret]["postgresPassword"] = "pw-2"
	eventually(t, func() bool { c.Enqueue(name); return written() })
}

// TestChartSecretsKeepOutOfAnothersNamespace: a namespace of the release's
// name that is not the validator's (someone else made it, unlabelled) is
// never taken: the leader neither labels it with the validator, which would
// let the workload controller run the release in it and delete it with the
// Validator, nor writes the validator's secret values into it.
func TestChartSecretsKeepOutOfAnothersNamespace(t *testing.T) {
	const name = "chart2"
	w, c, k := chartTest(t, name, map[string]map[string]string{
		"-database":        {"password": "pw-1"},
		"-ledger-api-auth": {"client-secret": "cs-1"},
	})
	ctx, ns := context.Background(), chartNamespace
	v := chartValidator(name, true)
	// Someone else's namespace, of the name the release would take.
	release := workload.ReleaseNamespace(v)
	foreign := map[string]string{"team": "other"}
	if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: release, Labels: foreign}}); err != nil {
		t.Fatal(err)
	}
	if err := k.Create(ctx, v); err != nil {
		t.Fatal(err)
	}
	w.record(t, name, true, domain.ValidatorSecrets{})
	// Once the cache shows the resource, a reconcile writes what it writes.
	eventually(t, func() bool {
		return c.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &v1alpha1.Validator{}) == nil
	})
	if err := c.writeChartSecrets(ctx, name); err != nil {
		t.Fatalf("writeChartSecrets: %v", err)
	}
	got := &corev1.Namespace{}
	if err := k.Get(ctx, types.NamespacedName{Name: release}, got); err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(foreign)
	want[corev1.LabelMetadataName] = release
	if !maps.Equal(got.Labels, want) {
		t.Errorf("another's namespace %s has labels %v; want them untouched, %v", release, got.Labels, want)
	}
	var secrets corev1.SecretList
	if err := k.List(ctx, &secrets, client.InNamespace(release)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		t.Errorf("the validator's Secret %s was written into another's namespace %s", s.Name, release)
	}
}

// TestChartSecretsWaitForTheReleaseFinalizer: nothing is written into the
// release's namespace, nor the namespace made, before the Validator carries
// the workload controller's finalizer, which deletes that namespace with
// it. Written before (a render that fails, such as a chart version the
// registry lacks, never adds it), the namespace and the copies of the
// validator's secret values outlived the Validator: nothing deletes them.
func TestChartSecretsWaitForTheReleaseFinalizer(t *testing.T) {
	const name = "chart3"
	w, c, k := chartTest(t, name, map[string]map[string]string{
		"-database":        {"password": "pw-1"},
		"-ledger-api-auth": {"client-secret": "cs-1"},
	})
	ctx, ns := context.Background(), chartNamespace
	v := chartValidator(name, false)
	if err := k.Create(ctx, v); err != nil {
		t.Fatal(err)
	}
	w.record(t, name, true, domain.ValidatorSecrets{})
	release := workload.ReleaseNamespace(v)
	key := types.NamespacedName{Namespace: ns, Name: name}
	eventually(t, func() bool { return c.kube.Get(ctx, key, &v1alpha1.Validator{}) == nil })
	if err := c.writeChartSecrets(ctx, name); err != nil {
		t.Fatalf("writeChartSecrets: %v", err)
	}
	if err := k.Get(ctx, types.NamespacedName{Name: release}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("release namespace %s before the Validator carries %s: %v; want none", release, workload.ReleaseFinalizer, err)
	}

	// The workload controller adds its finalizer: the Secrets follow.
	if err := k.Get(ctx, key, v); err != nil {
		t.Fatal(err)
	}
	v.Finalizers = append(v.Finalizers, workload.ReleaseFinalizer)
	if err := k.Update(ctx, v); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		cur := &v1alpha1.Validator{}
		return c.kube.Get(ctx, key, cur) == nil && len(cur.Finalizers) > 0
	})
	if err := c.writeChartSecrets(ctx, name); err != nil {
		t.Fatalf("writeChartSecrets: %v", err)
	}
	s := &corev1.Secret{}
	if err := k.Get(ctx, types.NamespacedName{Namespace: release, Name: workload.ChartDatabaseSecret}, s); err != nil || string(s.Data["postgresPassword"]) != "pw-1" {
		t.Fatalf("Secret %s/%s once the finalizer is there: %v; want it with the database password", release, workload.ChartDatabaseSecret, err)
	}
}

// chartNamespace is the chart tests' namespace, chartIssuer their identity
// provider's issuer.
const chartNamespace, chartIssuer = "intent-test", "http://idp.test/realms/r"

// chartTest runs the controller in chart mode and writes the validator
// name's own Secrets (by the suffix of their names) as the gateway writes
// them (the world's cluster writes nothing to the API server); k is a
// client of the API server.
func chartTest(t *testing.T, name string, own map[string]map[string]string) (w *world, c *Controller, k client.Client) {
	t.Helper()
	w = newWorld()
	c = run(t, w, func(o *Options) { o.Charts = true })
	scheme, err := clustergw.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	if k, err = client.New(apiServer, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for suffix, data := range own {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + suffix, Namespace: chartNamespace}, StringData: data}
		if err := k.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return w, c, k
}

// chartValidator is the Validator resource of name, reading its database
// and ledger API client Secrets; with finalizer, it carries the workload
// controller's, which deletes the release's namespace with it.
func chartValidator(name string, finalizer bool) *v1alpha1.Validator {
	v := &v1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: chartNamespace, Labels: map[string]string{workload.ManagedByLabel: workload.ManagedBy}},
		Spec: v1alpha1.ValidatorSpec{
			Config: v1alpha1.ValidatorConfig{
				Version: v1alpha1.ValidatorConfigVersion, Name: name, ImageRepo: "ghcr.io/example/docker", ImageTag: "0.7.3",
				Auth: &v1alpha1.Auth{Audience: "https://ledger." + name + ".test", LedgerAPIUser: "sa-" + name, LedgerAPIClient: name + "-validator-app",
					WalletClient: name + "-wallet-ui", NameServiceClient: name + "-ans-ui", JWKSURL: ptr.To(chartIssuer + "/certs"),
					OIDCAuthorityURL: ptr.To(chartIssuer), OIDCConfigURL: ptr.To(chartIssuer + "/.well-known/openid-configuration")},
				Cluster: v1alpha1.Cluster{ScanAddress: "http://scan.test", DefaultJVMOptions: "-Xmx1g"},
			},
			CustomAuth: true,
			Secrets: &v1alpha1.ValidatorSecretRefs{
				LedgerAPIAuth: &v1alpha1.SecretKeyRef{Name: name + "-ledger-api-auth", Key: "client-secret"},
				Database:      &v1alpha1.SecretKeyRef{Name: name + "-database", Key: "password"},
			},
		},
	}
	if finalizer {
		v.Finalizers = []string{workload.ReleaseFinalizer}
	}
	return v
}
