// Package workloadtest holds a Renderer for tests of the workload
// controller's chart mode: a made-up release at two versions, laid out in
// the validator's release namespace without pulling any chart.
package workloadtest

import (
	"context"
	"fmt"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// Versions of the made-up release: the validator's imageTag picks one; any
// other is a render failure (workload.RenderError, ReasonUnavailable).
const (
	// VersionA renders Participant and ValidatorApp Deployments and
	// Services, the Deployment Extra, the Service Kept (annotated
	// workload.KeepAnnotation: keep), the claim Dump and the ConfigMap
	// Settings.
	VersionA = "1.0.0"
	// VersionB renders what VersionA does but Extra and Kept, its
	// Deployments at image tag VersionB.
	VersionB = "2.0.0"
	// ReasonUnavailable is the reason of a version the release lacks.
	ReasonUnavailable = "ChartUnavailable"
	// Reference is the made-up chart's.
	Reference = "oci://registry.example.test/charts/release"
	Extra     = "extra"
	Kept      = "kept"
	Dump      = "dump"
	Settings  = "settings"
)

// Charts is the made-up release as a workload.Renderer.
type Charts struct {
	calls atomic.Int64
}

// Calls is how many times Render was called.
func (c *Charts) Calls() int64 { return c.calls.Load() }

// Render lays out the version v's imageTag names in workload.ReleaseNamespace(v).
func (c *Charts) Render(_ context.Context, v *v1alpha1.Validator) (*workload.Layout, error) {
	c.calls.Add(1)
	version := v.Spec.Config.ImageTag
	if version != VersionA && version != VersionB {
		return nil, &workload.RenderError{Reason: ReasonUnavailable,
			Message: fmt.Sprintf("chart %s:%s: not found in the registry", Reference, version)}
	}
	ns := workload.ReleaseNamespace(v)
	objs := []client.Object{
		claim(ns, Dump),
		deployment(ns, workload.Participant, version), service(ns, workload.Participant, nil),
		deployment(ns, workload.ValidatorApp, version), service(ns, workload.ValidatorApp, nil),
		configMap(ns, Settings),
	}
	if version == VersionA {
		objs = append(objs, deployment(ns, Extra, version), service(ns, Kept, map[string]string{workload.KeepAnnotation: "keep"}))
	}
	return &workload.Layout{Namespace: ns, Objects: objs, Charts: []v1alpha1.ChartRef{{
		Name: "release", Reference: Reference, Version: version, Digest: Digest(version),
	}}}, nil
}

// Digest is the made-up digest of version's chart.
func Digest(version string) string {
	return fmt.Sprintf("sha256:%064x", len(version)+int(version[0]))
}

// Image is the image of component at version.
func Image(component, version string) string {
	return "registry.example.test/" + component + ":" + version
}

func labels(component string) map[string]string {
	return map[string]string{"app": component, workload.ComponentLabel: component}
}

func deployment(ns, component, version string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: component, Namespace: ns, Labels: labels(component)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": component}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(component)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: component, Image: Image(component, version)}}},
			},
		},
	}
}

func service(ns, component string, annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: component, Namespace: ns, Labels: labels(component), Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": component},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
		},
	}
}

func claim(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{workload.KeepAnnotation: "keep"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string]string{"settings.conf": "canton.features.enable-preview-commands = yes"},
	}
}
