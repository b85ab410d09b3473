package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
)

// checkWorkloads is what a newcomer does after `make run`: create a
// validator through release 1.11, see its workloads with the kubeconfig the
// server wrote (as `kubectl --kubeconfig data/kubeconfig get deploy,sts,svc`
// would), watch its phase move to RUNNING because they became ready,
// schedule a backup, which needs its database running, and see a backup run
// in the run history.
func checkWorkloads(t *testing.T, base, token, dataDir string) {
	ctx := context.Background()
	c := testClient(t, base, token)
	created, err := c.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("alpha"))
	if err != nil || created.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v %s", statusOf(created), err, created.Body)
	}

	rc := adminConfig(t, dataDir)
	core, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	wantDeployments := []string{"alpha-participant", "alpha-validator-app", "alpha-wallet-web-ui", "alpha-ans-web-ui"}
	eventually(t, 60*time.Second, "the validator's workloads", func() bool {
		for _, name := range wantDeployments {
			d, err := core.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "Validator" || d.OwnerReferences[0].Name != "alpha" {
				t.Fatalf("deployment %s: owner references %v, want the Validator alpha", name, d.OwnerReferences)
			}
		}
		_, err := core.AppsV1().StatefulSets("default").Get(ctx, "alpha-postgres", metav1.GetOptions{})
		if err != nil {
			return false
		}
		_, err = core.CoreV1().Services("default").Get(ctx, "alpha-participant", metav1.GetOptions{})
		return err == nil
	})

	// Readiness comes from the simulated node through the real Deployment
	// and StatefulSet controllers; the phase from the workload controller.
	start := time.Now()
	eventually(t, 90*time.Second, "phase RUNNING", func() bool {
		r, err := c.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: ptr("alpha")})
		if err != nil || r.JSON200 == nil || len(r.JSON200.Validators) != 1 {
			return false
		}
		p := r.JSON200.Validators[0].Phase
		return p != nil && *p != managementapi.PENDING
	})
	t.Logf("create to RUNNING: %s after the workloads existed", time.Since(start).Round(100*time.Millisecond))
	eventually(t, 60*time.Second, "a backup schedule (the database runs)", func() bool {
		r, err := c.CreateBackupScheduleWithResponse(ctx, "alpha", managementapi.ValidatorBackupDto{Cron: ptr("0 3 * * *"), MaxBackups: 3})
		return err == nil && r.StatusCode() == http.StatusCreated
	})
	var cj *batchv1.CronJob
	eventually(t, 30*time.Second, "the backup CronJob", func() bool {
		cj, err = core.BatchV1().CronJobs("default").Get(ctx, "alpha-backup", metav1.GetOptions{})
		return err == nil
	})

	// A backup run now, as `kubectl create job --from=cronjob/alpha-backup`
	// makes it: the Job controller runs it on the simulated node, and the
	// run history shows it.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: "alpha-backup-manual", Namespace: "default", Labels: cj.Spec.JobTemplate.Labels,
			Annotations:     map[string]string{"cronjob.kubernetes.io/instantiate": "manual"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: cj.Spec.JobTemplate.Spec,
	}
	if _, err := core.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a backup Job: %v", err)
	}
	eventually(t, 60*time.Second, "the backup run in the run history", func() bool {
		r, err := c.ListValidatorRunsWithResponse(ctx, "alpha", &managementapi.ListValidatorRunsParams{Kind: ptr(managementapi.RunKindBackup)})
		if err != nil || r.JSON200 == nil || len(r.JSON200.Runs) == 0 {
			return false
		}
		run := r.JSON200.Runs[0]
		return run.Outcome == managementapi.RunSucceeded && run.FinishedAt != nil
	})

	// Drift: a Deployment deleted by hand comes back.
	if err := core.AppsV1().Deployments("default").Delete(ctx, "alpha-participant", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the deleted Deployment recreated", func() bool {
		d, err := core.AppsV1().Deployments("default").Get(ctx, "alpha-participant", metav1.GetOptions{})
		return err == nil && d.DeletionTimestamp == nil
	})
}

// eventually waits for cond; last, when given, says what was seen last
// when it fails.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool, last ...func() string) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			seen := ""
			for _, l := range last {
				seen += "; last seen: " + l()
			}
			t.Fatalf("%s: not within %s%s", what, limit, seen)
		}
	}
}

// checkNoRoom: a validator whose participant requests more CPUs than the
// embedded default's node has (100 of 64) stays PENDING: the node leaves
// its participant Pod Pending as a scheduler would, and the Validator's
// status gives the scheduler's reason.
func checkNoRoom(t *testing.T, base, token, dataDir string) {
	ctx := context.Background()
	c := testClient(t, base, token)
	v := apitest.ValidatorPayload("huge")
	v.Participant.Resources = &managementapi.ResourcesDto{CpuRequested: ptr("100")}
	if r, err := c.CreateValidatorWithResponse(ctx, v); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", statusOf(r), err)
	}
	rc := adminConfig(t, dataDir)
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	const why = "0/1 nodes are available: 1 Insufficient cpu."
	var last string
	eventually(t, 90*time.Second, "the participant unschedulable: "+why, func() bool {
		u, err := dyn.Resource(cluster.ValidatorResource).Namespace("default").Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			return false // not made yet
		}
		got := toValidator(t, u)
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionParticipantReady)
		if c == nil {
			return false
		}
		last = c.Reason + ": " + c.Message
		return got.Status.Phase == v1alpha1.PhasePending && c.Reason == "Unschedulable" && strings.Contains(c.Message, why)
	})
	r, err := c.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Name: ptr("huge")})
	if err != nil || r.JSON200 == nil || len(r.JSON200.Validators) != 1 || r.JSON200.Validators[0].Phase == nil || string(*r.JSON200.Validators[0].Phase) != "PENDING" {
		t.Errorf("1.11's phase of the validator that does not fit: %v %v (condition %s)", statusOf(r), err, last)
	}
}
