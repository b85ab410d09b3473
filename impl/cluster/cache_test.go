package cluster_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestCacheTrims: the Manager's cache (CacheOptions) holds a Secret's keys
// without their values and without its annotations (kubectl's
// last-applied-configuration may quote a value), a CronJob without its
// spec, only the digest the gateway compares, and a Deployment as its
// record (cluster.WorkloadRecord).
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
	s := &corev1.Secret{}
	if err := c.GetCache().Get(sctx, types.NamespacedName{Namespace: ns, Name: domain.OnboardingSecretName("mu")}, s); err != nil {
		t.Fatal(err)
	}
	v, has := s.Data[cluster.OnboardingSecretKey]
	if !has || v != nil || len(s.Annotations) != 0 || len(s.ManagedFields) != 0 || s.Labels[cluster.ValidatorLabel] != "mu" {
		t.Fatalf("cached Secret: got data %q annotations %v managedFields %d labels %v; want the key without its value, labels, nothing else", s.Data, s.Annotations, len(s.ManagedFields), s.Labels)
	}
	cj := &batchv1.CronJob{}
	if err := c.GetCache().Get(sctx, types.NamespacedName{Namespace: ns, Name: cluster.BackupCronJobName("mu")}, cj); err != nil {
		t.Fatal(err)
	}
	if cj.Spec.Schedule != "" || len(cj.Spec.JobTemplate.Spec.Template.Spec.Containers) != 0 || len(cj.Annotations) != 1 || len(cj.OwnerReferences) != 1 {
		t.Fatalf("cached CronJob: got spec %+v annotations %v owners %v; want no spec, the digest and the owner", cj.Spec, cj.Annotations, cj.OwnerReferences)
	}
	// A Deployment is cached as its record, which the typed client does
	// not read: the informer's handlers are given it.
	inf, err := c.GetCache().GetInformer(sctx, &appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan any, 1)
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if m, err := meta.Accessor(obj); err == nil && m.GetName() == "web" {
			got <- obj
		}
	}}); err != nil {
		t.Fatal(err)
	}
	var obj any
	select {
	case obj = <-got:
	case <-sctx.Done():
		t.Fatal("the Deployment never reached the informer's handler")
	}
	rec, ok := obj.(*cluster.WorkloadRecord)
	if !ok || rec.Replicas != 1 || rec.UID == "" || rec.Applied != "" || rec.Owned != "" || len(rec.Labels) != 0 || len(rec.Annotations) != 0 || len(rec.ManagedFields) != 0 {
		t.Fatalf("cached Deployment: got %#v; want its record: key, the replicas it wants, nothing applied by us (no digests), no labels, annotations or managedFields", obj)
	}
}
