package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
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
	if err := gw.ApplyValidator(ctx, validator(t, "mu", config("mu", "0.4.1", nil)), nil, domain.WrittenSecrets{}); err != nil {
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
	// Start runs on its own goroutine: a read before it has begun is refused.
	if !c.GetCache().WaitForCacheSync(sctx) {
		t.Fatal("the cache did not sync")
	}
	// Of managedFields, a Validator keeps the entry of spec.secrets' owner
	// (which ApplyValidator reads), every other kind none.
	read := func(name string, obj client.Object, managers ...string) {
		t.Helper()
		if err := c.GetClient().Get(sctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range obj.GetManagedFields() {
			got = append(got, e.Manager)
		}
		if !slices.Equal(got, managers) {
			t.Errorf("cached %T %s carries managedFields of %v, want %v", obj, name, got, managers)
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
	read("mu", v, "validator-manager-secret-refs")
	if v.Spec.Config.ImageTag != "0.4.1" {
		t.Fatalf("cached Validator: got %#v", v)
	}
}

// TestReleaseCache: chart mode's cache sees, outside the namespace, the
// labelled objects of the kinds the workload controller keeps in release
// namespaces, with the namespace's transforms; every other kind stays in the
// namespace.
func TestReleaseCache(t *testing.T) {
	o := cluster.CacheOptions("vm", 0)
	if err := cluster.ReleaseCache(&o, "vm"); err != nil {
		t.Fatal(err)
	}
	if _, ok := o.DefaultNamespaces[ctrlcache.AllNamespaces]; ok || len(o.DefaultNamespaces) != 1 {
		t.Errorf("default namespaces %v, want vm only", o.DefaultNamespaces)
	}
	byType := map[string]ctrlcache.ByObject{}
	for obj, by := range o.ByObject {
		byType[fmt.Sprintf("%T", obj)] = by
	}
	for _, kind := range []string{"*v1.Deployment", "*v1.StatefulSet", "*v1.Service", "*v1.PersistentVolumeClaim", "*v1.Pod", "*v1.Secret", "*v1.ConfigMap"} {
		by, ok := byType[kind]
		if !ok {
			t.Errorf("%s: not widened", kind)
			continue
		}
		here, elsewhere := by.Namespaces["vm"], by.Namespaces[ctrlcache.AllNamespaces]
		if len(by.Namespaces) != 2 || here.LabelSelector != nil || elsewhere.LabelSelector == nil ||
			elsewhere.LabelSelector.String() != cluster.ValidatorNamespaceLabel+"=vm" {
			t.Errorf("%s: namespaces %+v, want vm and the labelled objects of every other", kind, by.Namespaces)
		}
		if (here.Transform == nil) != (elsewhere.Transform == nil) {
			t.Errorf("%s: transforms differ inside and outside the namespace", kind)
		}
	}
	if by := byType["*v1.Secret"].Namespaces[ctrlcache.AllNamespaces]; by.Transform == nil {
		t.Error("Secrets of release namespaces keep their values")
	}
	if by, ok := byType["*v1alpha1.Validator"]; ok && len(by.Namespaces) != 1 {
		t.Errorf("Validators widened: %+v", by.Namespaces)
	}
}

// TestPodStatus: the cache keeps of a Pod its metadata and why it cannot
// start (phase, conditions, each container's state), not its spec nor the
// rest of its status.
func TestPodStatus(t *testing.T) {
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "s" not found`}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:       corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "c", Image: "i", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}},
		Status: corev1.PodStatus{
			Phase:                 corev1.PodPending,
			Conditions:            []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			PodIP:                 "127.0.0.9",
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", Image: "i", Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "c", Image: "i", ImageID: "sha", RestartCount: 3, State: waiting}},
		},
	}
	got, err := cluster.PodStatus(p)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{NodeName: "node"},
		Status: corev1.PodStatus{
			Phase:                 corev1.PodPending,
			Conditions:            []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "c", RestartCount: 3, State: waiting}},
		},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

// TestAppliedShape: the cache keeps of an applied workload or Service its
// metadata with the controller's own apply entry (of its field set, the
// digest), and of a workload its replicas, status, pod template metadata
// and claim templates; not the pod template's spec nor a Service's spec;
// and the same of an object it made.
func TestAppliedShape(t *testing.T) {
	fields := []byte(`{"f:spec":{"f:replicas":{}}}`)
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "w", Annotations: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: cluster.FieldOwner, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: fields}},
			{Manager: cluster.FieldOwner, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate},
		}}
	}
	kept := metav1.ObjectMeta{Name: "w", Annotations: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: cluster.FieldOwner, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(cluster.Digest(fields))}},
	}}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"password": "digest"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}},
	}
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}}
	for _, c := range []struct {
		name     string
		in, want client.Object
	}{
		{"Deployment", &appsv1.Deployment{ObjectMeta: meta(),
			Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: template, Selector: &metav1.LabelSelector{}},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 1}},
			&appsv1.Deployment{ObjectMeta: kept,
				Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{ObjectMeta: template.ObjectMeta}},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}},
		{"StatefulSet", &appsv1.StatefulSet{ObjectMeta: meta(),
			Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Template: template, VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim}, ServiceName: "s"},
			Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}},
			&appsv1.StatefulSet{ObjectMeta: kept,
				Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{ObjectMeta: template.ObjectMeta}, VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim}},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}}},
		{"Service (metadata)", &metav1.PartialObjectMetadata{ObjectMeta: meta()}, &metav1.PartialObjectMetadata{ObjectMeta: kept}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := cluster.AppliedShape(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, c.want) {
				t.Fatalf("got %#v\nwant %#v", got, c.want)
			}
			// Idempotent, as client-go asks of a transform: an informer
			// may hand it an object it made.
			if again, err := cluster.AppliedShape(got); err != nil || !equality.Semantic.DeepEqual(again, c.want) {
				t.Fatalf("again: got %#v, %v\nwant %#v", again, err, c.want)
			}
		})
	}
}

// TestCacheInternsMetadata: two objects decoded apart, a collection
// between them, that carry the same labels share their strings once the
// cache's transform has run (the metadata's and the pod template's), keep
// their values, and a label value of one object alone (a template hash) is
// left as decoded.
func TestCacheInternsMetadata(t *testing.T) {
	const raw = `{"metadata":{"name":"%s","namespace":"vm","labels":{"validator-manager.io/validator":"v1","pod-template-hash":"h1"},"annotations":{"validator-manager.io/applied":"%s"}},
		"spec":{"template":{"metadata":{"labels":{"app.kubernetes.io/name":"participant"}}}}}`
	var transform ctrlcache.ByObject
	for obj, by := range cluster.CacheOptions("vm", 0).ByObject {
		if _, ok := obj.(*appsv1.Deployment); ok {
			transform = by
		}
	}
	var objs []*appsv1.Deployment
	for _, name := range []string{"a", "b"} {
		d := &appsv1.Deployment{}
		if err := json.Unmarshal(fmt.Appendf(nil, raw, name, name), d); err != nil {
			t.Fatal(err)
		}
		if _, err := transform.Namespaces["vm"].Transform(d); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, d)
		runtime.GC()
	}
	same := func(what, a, b string) {
		t.Helper()
		if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s: %q and %q are not one string", what, a, b)
		}
	}
	// The key of m that is k.
	key := func(m map[string]string, k string) string {
		for have := range m {
			if have == k {
				return have
			}
		}
		t.Fatalf("no label %s in %v", k, m)
		return ""
	}
	const label, template, applied = "validator-manager.io/validator", "app.kubernetes.io/name", "validator-manager.io/applied"
	same("label key", key(objs[0].Labels, label), key(objs[1].Labels, label))
	same("label value", objs[0].Labels[label], objs[1].Labels[label])
	same("namespace", objs[0].Namespace, objs[1].Namespace)
	same("annotation key", key(objs[0].Annotations, applied), key(objs[1].Annotations, applied))
	same("pod template label key", key(objs[0].Spec.Template.Labels, template), key(objs[1].Spec.Template.Labels, template))
	same("pod template label value", objs[0].Spec.Template.Labels[template], objs[1].Spec.Template.Labels[template])
	if a, b := objs[0].Labels["pod-template-hash"], objs[1].Labels["pod-template-hash"]; unsafe.StringData(a) == unsafe.StringData(b) {
		t.Error("a template hash, one object's, was interned")
	}
	if objs[0].Annotations[applied] != "a" || objs[1].Annotations[applied] != "b" || objs[0].Labels[label] != "v1" {
		t.Errorf("values changed: %v %v %v", objs[0].Annotations, objs[1].Annotations, objs[0].Labels)
	}
}
