package nodesim

import (
	"context"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// Applications: on a cluster, whatever deploys an Application (Helm, Argo
// CD) runs its Pods. On the embedded default the simulator stands in for
// it: each Application gets a Deployment of the same name (owned by it, so
// deleting the Application removes it) with spec.replicas (default 1) Pods
// of spec.image, labelled app.kubernetes.io/instance=<name>, one container
// requesting 250m CPU and 256Mi, limited to 1 CPU and 1Gi. The
// Application's status follows the Deployment: {phase: Running when every
// replica is ready, else Pending; replicas: ready replicas}.

// ApplicationGVR is the Application resource (deploy/crds).
var ApplicationGVR = schema.GroupVersionResource{Group: "validator-manager.io", Version: "v1alpha1", Resource: "applications"}

// InstanceLabel ties a Pod to its Application.
const InstanceLabel = "app.kubernetes.io/instance"

// SampleApplication is the Application a new embedded control plane has, so that
// release 2.0's application reads and metrics show something on a first run.
const SampleApplication = "sample-app"

// FieldManager is the simulator's name in managedFields.
const FieldManager = "nodesim"

const defaultImage = "busybox:1.36"

var (
	appRequests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	appLimits   = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
)

// CreateSampleApplication creates the sample Application (nginx, two
// replicas) in namespace; an existing one is kept. Call it on a new cluster
// only, so that an operator who deleted it does not see it come back.
func CreateSampleApplication(ctx context.Context, dyn dynamic.Interface, namespace string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ApplicationGVR.GroupVersion().String(),
		"kind":       "Application",
		"metadata":   map[string]any{"name": SampleApplication, "namespace": namespace},
		"spec":       map[string]any{"image": "nginx:1.27", "replicas": int64(2)},
	}}
	_, err := dyn.Resource(ApplicationGVR).Namespace(namespace).Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// deploymentChanged enqueues the Application that owns the Deployment.
func (s *Simulator) deploymentChanged(o any) {
	m, err := metaOf(o)
	if err != nil {
		return
	}
	for _, ref := range m.GetOwnerReferences() {
		if ref.Kind == "Application" && ref.APIVersion == ApplicationGVR.GroupVersion().String() {
			s.queue.Add(key{kind: applicationKey, namespace: m.GetNamespace(), name: ref.Name})
		}
	}
}

func (s *Simulator) syncApplication(ctx context.Context, namespace, name string) error {
	obj, err := s.apps.ByNamespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // its Deployment is garbage-collected
	}
	if err != nil {
		return err
	}
	app, ok := obj.(*unstructured.Unstructured)
	if !ok || app.GetDeletionTimestamp() != nil {
		return nil
	}
	replicas, found, _ := unstructured.NestedInt64(app.Object, "spec", "replicas")
	if !found || replicas < 0 {
		replicas = 1
	}
	image, _, _ := unstructured.NestedString(app.Object, "spec", "image")
	if image == "" {
		image = defaultImage
	}
	dep, err := s.deploys.Deployments(namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if dep == nil || !deploymentMatches(dep, app, int32(replicas), image) {
		if dep, err = s.core.AppsV1().Deployments(namespace).Apply(ctx, applicationDeployment(app, int32(replicas), image),
			metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return err
		}
	}
	phase := "Pending"
	if dep.Status.ObservedGeneration >= dep.Generation && dep.Status.ReadyReplicas == int32(replicas) && dep.Status.UpdatedReplicas == int32(replicas) {
		phase = "Running"
	}
	status := map[string]any{"phase": phase, "replicas": int64(dep.Status.ReadyReplicas)}
	if have, _, _ := unstructured.NestedMap(app.Object, "status"); reflect.DeepEqual(have, status) {
		return nil
	}
	u := app.DeepCopy()
	u.Object["status"] = status
	_, err = s.dyn.Resource(ApplicationGVR).Namespace(namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func deploymentMatches(d *appsv1.Deployment, app *unstructured.Unstructured, replicas int32, image string) bool {
	owned := false
	for _, r := range d.OwnerReferences {
		owned = owned || r.UID == app.GetUID()
	}
	c := d.Spec.Template.Spec.Containers
	return owned && ptr.Deref(d.Spec.Replicas, 1) == replicas && len(c) == 1 && c[0].Image == image
}

func applicationDeployment(app *unstructured.Unstructured, replicas int32, image string) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{InstanceLabel: app.GetName()}
	resources := corev1ac.ResourceRequirements().WithRequests(appRequests.DeepCopy()).WithLimits(appLimits.DeepCopy())
	return appsv1ac.Deployment(app.GetName(), app.GetNamespace()).
		WithLabels(labels).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(app.GetAPIVersion()).WithKind(app.GetKind()).
			WithName(app.GetName()).WithUID(app.GetUID()).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().
					WithName("app").WithImage(image).WithResources(resources)))))
}
