package cluster_test

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestCacheTrims: the Manager's cache (CacheOptions) holds typed objects
// without managedFields, a Secret with the keys of its data but not their
// values, nor its annotations (kubectl's last-applied-configuration may
// quote a value).
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
	// A read before Start has run fails (the cache is not started).
	if !c.GetCache().WaitForCacheSync(sctx) {
		t.Fatal("the cache did not sync")
	}
	read := func(name string, obj client.Object) {
		t.Helper()
		if err := c.GetClient().Get(sctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			t.Fatal(err)
		}
		if len(obj.GetManagedFields()) != 0 {
			t.Errorf("cached %T %s carries managedFields", obj, name)
		}
	}
	s := &corev1.Secret{}
	read(domain.OnboardingSecretName("mu"), s)
	if v, ok := s.Data[cluster.OnboardingSecretKey]; !ok || len(v) != 0 || len(s.Annotations) != 0 || len(s.OwnerReferences) != 1 {
		t.Fatalf("cached Secret: got %#v; want its key without its value, its owner, no annotation", s)
	}
	cj := &batchv1.CronJob{}
	read(cluster.BackupCronJobName("mu"), cj)
	if cj.Spec.Schedule != "0 3 * * *" || len(cj.OwnerReferences) != 1 {
		t.Fatalf("cached CronJob: got %#v", cj)
	}
	v := &v1alpha1.Validator{}
	read("mu", v)
	if v.Spec.Config.ImageTag != "0.4.1" {
		t.Fatalf("cached Validator: got %#v", v)
	}
}
