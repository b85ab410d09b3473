package runs_test

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/runs"
	"github.com/validator-manager/validator-manager/impl/domain"
)

var (
	start = time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	end   = start.Add(90 * time.Second)
)

// job is a Job of the CronJob cronJob for validator, started at start.
func job(validator, cronJob string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: cronJob + "-29150000", UID: "uid-1",
			Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.ValidatorLabel: validator},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "CronJob", Name: cronJob, UID: "cron-uid", Controller: ptr.To(true),
			}},
		},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: start}},
	}
}

func TestObserve(t *testing.T) {
	yes, no := true, false
	backup := domain.Run{Validator: "v1", Kind: domain.RunBackup, StartedAt: start, JobUID: "uid-1"}
	prune := backup
	prune.Kind = domain.RunPrune
	succeeded := backup
	succeeded.FinishedAt, succeeded.Succeeded = &end, &yes
	failed := backup
	failed.FinishedAt, failed.Succeeded, failed.Message = &end, &no, "BackoffLimitExceeded: Job has reached the specified backoff limit"
	failedBare := failed
	failedBare.Message = "DeadlineExceeded"

	failedCondition := func(reason, message string) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: metav1.Time{Time: end}},
			}
		}
	}
	tests := []struct {
		name    string
		cronJob string
		edit    func(*batchv1.Job)
		want    domain.Run
		wantOK  bool
	}{
		{"backup running", "v1-backup", nil, backup, true},
		{"prune running", "v1-prune", nil, prune, true},
		{"succeeded", "v1-backup", func(j *batchv1.Job) {
			j.Status.CompletionTime = &metav1.Time{Time: end}
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}, succeeded, true},
		{"failed", "v1-backup", failedCondition("BackoffLimitExceeded", "Job has reached the specified backoff limit"), failed, true},
		{"failed without a message", "v1-backup", failedCondition("DeadlineExceeded", ""), failedBare, true},
		{"failed condition not true", "v1-backup", func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}}
		}, backup, true},
		{"not started", "v1-backup", func(j *batchv1.Job) { j.Status.StartTime = nil }, domain.Run{}, false},
		{"another CronJob of the validator", "v1-other", nil, domain.Run{}, false},
		{"another validator's CronJob", "v2-backup", nil, domain.Run{}, false},
		{"no validator label", "v1-backup", func(j *batchv1.Job) { delete(j.Labels, cluster.ValidatorLabel) }, domain.Run{}, false},
		{"no controller", "v1-backup", func(j *batchv1.Job) { j.OwnerReferences[0].Controller = nil }, domain.Run{}, false},
		{"controlled by something else", "v1-backup", func(j *batchv1.Job) { j.OwnerReferences[0].Kind = "Validator" }, domain.Run{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job("v1", tt.cronJob)
			if tt.edit != nil {
				tt.edit(j)
			}
			got, ok := runs.Observe(j)
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v %+v, want %v %+v", ok, got, tt.wantOK, tt.want)
			}
			// The same of the Job as the Manager's cache keeps it.
			if got, ok := runs.Observe(cachedJob(t, j)); ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("from the cache: got %v %+v, want %v %+v", ok, got, tt.wantOK, tt.want)
			}
		})
	}
}

// cachedJob is j as the Manager's cache keeps it (cluster.CacheOptions).
func cachedJob(t *testing.T, j *batchv1.Job) *batchv1.Job {
	t.Helper()
	out, err := cluster.CacheOptions("", 0).DefaultTransform(j.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*batchv1.Job)
}

var namespaces atomic.Int32

// eventually polls cond until it holds (nil) or 20 s pass.
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

// TestControllerRecordsRuns creates Jobs as the CronJob controller does
// (labels from the job template, the CronJob as controller) and moves their
// status as the Job controller does; the run table follows.
func TestControllerRecordsRuns(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("runs-%d", namespaces.Add(1))
	if err := apiServer.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"v1", "v2"} {
		v := &domain.Validator{Name: name, Phase: domain.PhasePending, CustomAuth: true, DatabaseStorage: "10Gi", Spec: []byte(`{}`)}
		if err := db.RecordCreate(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
	}

	// makeJob creates the CronJob (when new) and one Job of it, started.
	makeJob := func(validator, cronJob, jobName string) *batchv1.Job {
		t.Helper()
		labels := map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.ValidatorLabel: validator}
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: cronJob, Namespace: ns, Labels: labels},
			Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *", JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       jobSpec(),
			}},
		}
		if err := apiServer.Create(ctx, cj); err != nil {
			if err := apiServer.Get(ctx, types.NamespacedName{Namespace: ns, Name: cronJob}, cj); err != nil {
				t.Fatal(err)
			}
		}
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{
				Name: jobName, Namespace: ns, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cronJob, UID: cj.UID, Controller: ptr.To(true)}},
			},
			Spec: jobSpec(),
		}
		if err := apiServer.Create(ctx, j); err != nil {
			t.Fatalf("create job %s: %v", jobName, err)
		}
		j.Status.StartTime = &metav1.Time{Time: start}
		j.Status.Active = 1
		if err := apiServer.Status().Update(ctx, j); err != nil {
			t.Fatalf("start job %s: %v", jobName, err)
		}
		return j
	}
	finish := func(j *batchv1.Job, ok bool) {
		t.Helper()
		at := metav1.Time{Time: end}
		j.Status.Active = 0
		if ok {
			j.Status.Succeeded = 1
			j.Status.CompletionTime = &at
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: at},
			}
		} else {
			j.Status.Failed = 1
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: at},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: at},
			}
		}
		if err := apiServer.Status().Update(ctx, j); err != nil {
			t.Fatalf("finish job %s: %v", j.Name, err)
		}
	}

	backup := makeJob("v1", "v1-backup", "v1-backup-1")
	failing := makeJob("v1", "v1-backup", "v1-backup-2")
	prune := makeJob("v1", "v1-prune", "v1-prune-1")
	makeJob("v1", "v1-other", "v1-other-1")         // not a run
	makeJob("gone", "gone-backup", "gone-backup-1") // validator not in the database
	other := makeJob("v2", "v2-backup", "v2-backup-1")

	yes, no := true, false
	run := func(j *batchv1.Job, kind domain.RunKind) domain.Run {
		return domain.Run{Validator: j.Labels[cluster.ValidatorLabel], Kind: kind, StartedAt: start, JobUID: string(j.UID)}
	}
	wantRuns := func(what, validator string, want ...domain.Run) {
		t.Helper()
		eventually(t, what, func(ctx context.Context) error {
			got, total, err := db.ListRuns(ctx, domain.RunFilter{Validator: validator, Page: domain.Page{Limit: 100}})
			if err != nil {
				return err
			}
			byUID := map[string]domain.Run{}
			for _, r := range got {
				r.ID = 0
				byUID[r.JobUID] = r
			}
			if int(total) != len(want) || len(byUID) != len(want) {
				return fmt.Errorf("got %d runs %+v, want %d", total, got, len(want))
			}
			for _, w := range want {
				if g := byUID[w.JobUID]; !reflect.DeepEqual(g, w) {
					return fmt.Errorf("got %+v, want %+v", g, w)
				}
			}
			return nil
		})
	}
	wantRuns("started runs recorded", "v1", run(backup, domain.RunBackup), run(failing, domain.RunBackup), run(prune, domain.RunPrune))
	wantRuns("the other validator's run recorded", "v2", run(other, domain.RunBackup))

	finish(backup, true)
	finish(failing, false)
	ok, bad := run(backup, domain.RunBackup), run(failing, domain.RunBackup)
	ok.FinishedAt, ok.Succeeded = &end, &yes
	bad.FinishedAt, bad.Succeeded, bad.Message = &end, &no, "BackoffLimitExceeded: Job has reached the specified backoff limit"
	wantRuns("finished runs recorded", "v1", ok, bad, run(prune, domain.RunPrune))

	// A Job that is gone keeps its run.
	if err := apiServer.Delete(ctx, backup); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	wantRuns("run of a deleted Job kept", "v1", ok, bad, run(prune, domain.RunPrune))
}

func jobSpec() batchv1.JobSpec {
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "run", Image: "busybox.test/run:1"}},
	}}}
}
