package workload_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// TestConfigKubernetesValues: the configuration's Kubernetes values reach
// the pods as they are: the database's volumes, mounts, pull secrets and
// replicas, its resources over the chart's defaults; variables without a
// name are skipped, valueFrom wins over value, a later name replaces.
func TestConfigKubernetesValues(t *testing.T) {
	v := sample("v")
	vols := []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Gi"))}}}}
	mounts := []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}}
	v.Spec.Config.DatabaseWorkload = &v1alpha1.DatabaseWorkload{
		Volumes: &vols, VolumeMounts: &mounts,
		Workload: v1alpha1.Workload{
			Resources:        &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pg-pull"}}, Replicas: ptr.To[int32](1),
		},
	}
	secret := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}
	v.Spec.Config.Participant.EnvVars = []corev1.EnvVar{
		{Value: "nameless"},
		{Name: "FROM_SECRET", Value: "ignored", ValueFrom: secret},
		{Name: "TWICE", Value: "1"},
		{Name: "TWICE", Value: "2"},
	}

	pod := statefulSet(t, v).Spec.Template.Spec
	c := pod.Containers[0]
	if !equality.Semantic.DeepEqual(pod.Volumes, vols) || !equality.Semantic.DeepEqual(c.VolumeMounts[1:], mounts) {
		t.Errorf("database volumes %+v mounts %+v, want the configuration's after the data volume", pod.Volumes, c.VolumeMounts)
	}
	if len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "pg-pull" {
		t.Errorf("database pull secrets %+v", pod.ImagePullSecrets)
	}
	mem, cpu := c.Resources.Limits[corev1.ResourceMemory], c.Resources.Requests[corev1.ResourceCPU]
	if mem.String() != "8Gi" || cpu.String() != "500m" {
		t.Errorf("database resources %+v, want the memory limit 8Gi over the chart's cpu request 500m", c.Resources)
	}

	p := deployment(t, v, workload.Participant).Spec.Template.Spec.Containers[0]
	count := map[string]int{}
	for _, e := range p.Env {
		count[e.Name]++
	}
	if count[""] != 0 || count["TWICE"] != 1 || env(p, "TWICE").Value != "2" {
		t.Errorf("participant env %+v: want no nameless variable and TWICE=2 once", p.Env)
	}
	if e := env(p, "FROM_SECRET"); e == nil || e.Value != "" || !equality.Semantic.DeepEqual(e.ValueFrom, secret) {
		t.Errorf("FROM_SECRET %+v, want only the secret's key", e)
	}
}
