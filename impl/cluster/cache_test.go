package cluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestCacheTrims: the Manager's cache (CacheOptions) holds a Secret as its
// record (cluster.SecretRecord: the keys of its data without their values,
// no annotation, which kubectl's last-applied-configuration may quote a
// value in), a CronJob as its record (cluster.CronJobRecord: no spec, only
// the digest the gateway compares), and a Deployment as its record
// (cluster.WorkloadRecord), and a Validator once, as its encoding, from
// which a reader decodes it typed: a typed read of the cache, which would
// be a second informer of Validators, is refused.
func TestCacheTrims(t *testing.T) {
	if realServer == nil {
		t.Skip(backendFakes)
	}
	ctx := context.Background()
	ns := newNamespace(t, "c")
	gw, start, _ := gatewayOn(t, realServer, ns, cluster.KubeOptions{})
	start()
	if err := gw.ApplyValidator(ctx, validator(t, "mu", config("mu", "0.4.1", nil)), nil); err != nil {
		t.Fatal(err)
	}
	if err := gw.WriteSecrets(ctx, "mu", domain.ValidatorSecrets{OnboardingSecret: onboardingValue}); err != nil {
		t.Fatal(err)
	}
	if err := gw.ApplyBackupSchedule(ctx, "mu", &domain.BackupSchedule{Validator: "mu", Cron: "0 3 * * *", MaxBackups: 2}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.test/web:1"}}}},
	}}
	core, _ := realClients(t)
	if _, err := core.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scheme, err := cluster.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctrlcluster.New(realServer, func(o *ctrlcluster.Options) { o.Scheme = scheme; o.Cache = cluster.CacheOptions(ns, 0) })
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(cctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	c.GetCache().WaitForCacheSync(sctx)
	// Each is cached as its record, which the typed client does not read:
	// the informer's handlers are given it.
	obj := recordOf(t, sctx, c.GetCache(), &corev1.Secret{}, domain.OnboardingSecretName("mu"))
	if s, ok := obj.(*cluster.SecretRecord); !ok || s.Validator != "mu" || !slices.Equal(s.Keys, []string{cluster.OnboardingSecretKey}) ||
		len(s.GetAnnotations()) != 0 || len(s.OwnerReferences) != 1 {
		t.Fatalf("cached Secret: got %#v; want its record: key, owner, validator and the keys of its data, nothing else", obj)
	}
	obj = recordOf(t, sctx, c.GetCache(), &batchv1.CronJob{}, cluster.BackupCronJobName("mu"))
	if cj, ok := obj.(*cluster.CronJobRecord); !ok || cj.Digest == "" || len(cj.GetAnnotations()) != 0 || len(cj.OwnerReferences) != 1 || cj.Labels[cluster.ValidatorLabel] != "mu" {
		t.Fatalf("cached CronJob: got %#v; want its record: key, labels, owner and the digest of its spec", obj)
	}
	obj = recordOf(t, sctx, c.GetCache(), cluster.ValidatorObject(), "mu")
	v, ok := cluster.DecodeValidator(obj)
	if !ok || v.Name != "mu" || v.Spec.Config.ImageTag != "0.4.1" || len(v.ManagedFields) != 0 {
		t.Fatalf("cached Validator: got %#v, decoded %#v; want its encoding, which decodes to the Validator without managedFields", obj, v)
	}
	tctx, tcancel := context.WithTimeout(sctx, time.Second)
	defer tcancel()
	if err := c.GetCache().Get(tctx, client.ObjectKey{Namespace: ns, Name: "mu"}, &v1alpha1.Validator{}); err == nil {
		t.Fatal("a typed Validator read from the cache: want it refused (a second informer of Validators)")
	}
	// The refusal is the transform's, not the read's timeout.
	typed := &v1alpha1.Validator{}
	typed.Name, typed.Namespace = "mu", ns
	if _, err := transformOf(t, cluster.CacheOptions(ns, 0), scheme, cluster.ValidatorGVK)(typed); err == nil || !strings.Contains(err.Error(), "stored encoding only") {
		t.Fatalf("the cache's transform given a typed Validator: got %v, want it refused", err)
	}
	obj = recordOf(t, sctx, c.GetCache(), &appsv1.Deployment{}, "web")
	rec, ok := obj.(*cluster.WorkloadRecord)
	if !ok || rec.Replicas != 1 || rec.UID == "" || rec.Applied != "" || rec.Owned != "" || len(rec.GetLabels()) != 0 || len(rec.GetAnnotations()) != 0 || len(rec.GetManagedFields()) != 0 {
		t.Fatalf("cached Deployment: got %#v; want its record: key, the replicas it wants, nothing applied by us (no digests), no labels, annotations or managedFields", obj)
	}
}

// recordOf is what the cache's informer of obj's kind hands its handlers
// of the object of that name: a record, which the typed client does not
// read.
func recordOf(t *testing.T, ctx context.Context, c ctrlcache.Cache, obj client.Object, name string) any {
	t.Helper()
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan any, 1)
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if m, err := meta.Accessor(o); err == nil && m.GetName() == name {
			got <- o
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	select {
	case o := <-got:
		return o
	case <-ctx.Done():
		t.Fatalf("%T %s never reached the informer's handler", obj, name)
		return nil
	}
}
