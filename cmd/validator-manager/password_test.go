package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// checkPasswordEdit: an edit that gives the validator alpha (checkWorkloads)
// a new database password is set on its running database by the rotation
// Job before the apps restart with it; the simulated node refuses a pod
// whose password the database does not take, so the apps are ready again,
// and the validator back at COMPLETED, only when the database takes it.
func checkPasswordEdit(t *testing.T, base, token, dataDir string) {
	ctx := context.Background()
	c := testClient(t, base, token)
	const password = "a-New-database-Password-5"
	edit := managementapi.ValidatorEditDto{Name: "alpha", DatabaseConfig: &managementapi.ValidatorDbConfigDto{Username: ptr("cnadmin"), Password: ptr(password)}}
	if r, err := c.UpdateValidatorWithResponse(ctx, edit); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("edit: %v %v", statusOf(r), err)
	}
	rc := adminConfig(t, dataDir)
	core := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	digest := cluster.PasswordDigest([]byte(password))
	eventually(t, 120*time.Second, "the rotation Job completed", func() bool {
		j, err := core.BatchV1().Jobs("default").Get(ctx, workload.RotationJobName("alpha"), metav1.GetOptions{})
		if err != nil || j.Labels[cluster.DatabasePasswordLabel] != digest {
			return false
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				t.Fatalf("the rotation Job failed: %s", c.Message)
			}
		}
		return j.Status.Succeeded == 1
	})
	eventually(t, 120*time.Second, "the apps ready on the new password, the validator COMPLETED", func() bool {
		for _, name := range []string{"alpha-participant", "alpha-validator-app"} {
			d, err := core.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || d.Spec.Template.Annotations[workload.PasswordAnnotation] != digest || d.Status.ObservedGeneration != d.Generation ||
				d.Status.UpdatedReplicas != 1 || d.Status.ReadyReplicas != 1 || d.Status.Replicas != 1 {
				return false
			}
		}
		v := getValidator(t, dyn, "alpha")
		return v.Status.Phase == v1alpha1.PhaseCompleted && v.Status.ObservedGeneration == v.Generation
	})
	pods, err := core.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: workload.ValidatorLabel + "=alpha," + workload.ComponentLabel + "=" + workload.ValidatorApp})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
		t.Fatalf("the validator app's pods after the edit: %v %+v, want one running", err, pods)
	}
}
