package nodesim

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"time"

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
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Applications: on a cluster, whatever deploys an Application (Helm, Argo
// CD) runs its Pods; here the simulator stands in with a Deployment of each
// (docs/decisions.md, "Applications run as Deployments").

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
	return client.IgnoreAlreadyExists(err)
}

// application is an empty Application (unstructured: the simulator reads
// spec.replicas and spec.image only).
func application() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ApplicationGVR.GroupVersion().WithKind("Application"))
	return u
}

// syncApplication applies the Application's Deployment and writes the
// Application's status from it.
func (s *Simulator) syncApplication(ctx context.Context, key client.ObjectKey) (time.Duration, error) {
	app := application()
	if err := s.client.Get(ctx, key, app); err != nil {
		return 0, client.IgnoreNotFound(err) // its Deployment is garbage-collected
	}
	if app.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	replicas, found, _ := unstructured.NestedInt64(app.Object, "spec", "replicas")
	if !found || replicas < 0 {
		replicas = 1
	}
	image, _, _ := unstructured.NestedString(app.Object, "spec", "image")
	image = cmp.Or(image, defaultImage)
	dep := &appsv1.Deployment{}
	if err := s.client.Get(ctx, key, dep); err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	} else if err != nil || !deploymentMatches(dep, app, int32(replicas), image) {
		return 0, s.client.Apply(ctx, applicationDeployment(app, int32(replicas), image), client.FieldOwner(FieldManager), client.ForceOwnership)
	}
	phase := "Pending"
	if dep.Status.ObservedGeneration >= dep.Generation && dep.Status.ReadyReplicas == int32(replicas) && dep.Status.UpdatedReplicas == int32(replicas) {
		phase = "Running"
	}
	status := map[string]any{"phase": phase, "replicas": int64(dep.Status.ReadyReplicas)}
	if have, _, _ := unstructured.NestedMap(app.Object, "status"); reflect.DeepEqual(have, status) {
		return 0, nil
	}
	app.Object["status"] = status
	return 0, client.IgnoreNotFound(s.client.Status().Update(ctx, app, client.FieldOwner(FieldManager)))
}

func deploymentMatches(d *appsv1.Deployment, app *unstructured.Unstructured, replicas int32, image string) bool {
	owned := slices.ContainsFunc(d.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == app.GetUID() })
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

// trimDeployment keeps of a cached Deployment's pod template what
// deploymentMatches compares.
func trimDeployment(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	d.ManagedFields = nil
	containers := make([]corev1.Container, len(d.Spec.Template.Spec.Containers))
	for i, c := range d.Spec.Template.Spec.Containers {
		containers[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	d.Spec.Template = corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: containers}}
	return d, nil
}
