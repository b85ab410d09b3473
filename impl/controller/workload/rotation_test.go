package workload_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// setDatabasePassword writes the database Secret as the gateway does after
// an edit: the password's digest as a label, the replaced one kept.
func setDatabasePassword(t *testing.T, v *v1alpha1.Validator, password, previous string) {
	t.Helper()
	eventually(t, "write the database Secret", func(ctx context.Context) error {
		s := &corev1.Secret{}
		if err := apiServer.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: v.Name + "-database"}, s); err != nil {
			return err
		}
		s.Labels = map[string]string{cluster.DatabasePasswordLabel: cluster.PasswordDigest([]byte(password))}
		s.Data = map[string][]byte{"password": []byte(password)}
		if previous != "" {
			s.Data[cluster.PreviousDatabasePasswordKey] = []byte(previous)
		}
		return apiServer.Update(ctx, s)
	})
}

// waitAppsOn waits until the apps' pod templates carry the digest of
// password ("": none).
func waitAppsOn(t *testing.T, v *v1alpha1.Validator, password string) {
	t.Helper()
	want := ""
	if password != "" {
		want = cluster.PasswordDigest([]byte(password))
	}
	eventually(t, "apps on "+password, func(ctx context.Context) error {
		for _, c := range []string{workload.Participant, workload.ValidatorApp} {
			d, err := getDeployment(ctx, v, c)
			if err != nil {
				return err
			}
			if got := d.Spec.Template.Annotations[workload.PasswordAnnotation]; got != want {
				return fmt.Errorf("%s: %q, want %q", c, got, want)
			}
		}
		return nil
	})
}

// rotationJob waits for the rotation Job setting password.
func rotationJob(t *testing.T, v *v1alpha1.Validator, password string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{}
	eventually(t, "rotation Job", func(ctx context.Context) error {
		if err := apiServer.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: workload.RotationJobName(v.Name)}, j); err != nil {
			return err
		}
		if got, want := j.Labels[cluster.DatabasePasswordLabel], cluster.PasswordDigest([]byte(password)); got != want {
			return fmt.Errorf("Job of %q, want %q", got, want)
		}
		return nil
	})
	return j
}

// finish writes the status the Job controller would once its pod ended
// (envtest runs no kube-controller-manager).
func finish(t *testing.T, j *batchv1.Job, ok bool) {
	t.Helper()
	now := metav1.Now()
	cond := func(typ batchv1.JobConditionType, reason, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now}
	}
	j.Status.StartTime = &now
	if ok {
		j.Status.Succeeded, j.Status.CompletionTime = 1, &now
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached", "Reached expected number of succeeded pods"),
			cond(batchv1.JobComplete, "CompletionsReached", "Reached expected number of succeeded pods")}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
			cond(batchv1.JobFailed, "BackoffLimitExceeded", "Job has reached the specified backoff limit")}
	}
	if err := apiServer.Status().Update(context.Background(), j); err != nil {
		t.Fatal(err)
	}
}

// An edit of the internal database's password: the apps keep the old one
// until the rotation Job set the new one on the running database, then
// roll to it; a rotation that fails leaves them on the old one and the
// condition says so. A database Secret that reaches the cache after the
// apps' Deployments were made (a new validator: the gateway writes it next)
// rolls nothing: they start with its password already.
func TestControllerRotatesDatabasePassword(t *testing.T) {
	v := create(t, nil)
	ctx := context.Background()
	waitCondition(t, v, v1alpha1.ConditionParticipantReady, workload.ReasonSecretNotFound, `secret "v1-database" not found`)
	made := map[string]int64{}
	for _, c := range []string{workload.Participant, workload.ValidatorApp} {
		d, err := getDeployment(ctx, v, c)
		if err != nil {
			t.Fatal(err)
		}
		made[c] = d.Generation
	}
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "v1-database", Namespace: v.Namespace,
		Labels: map[string]string{cluster.DatabasePasswordLabel: cluster.PasswordDigest([]byte("first"))}},
		StringData: map[string]string{"password": "first"}}
	if err := apiServer.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	writeReads(t, v)
	eventually(t, "the Secrets seen", func(ctx context.Context) error {
		var cur v1alpha1.Validator
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		for _, c := range cur.Status.Conditions {
			if c.Reason == workload.ReasonSecretNotFound {
				return fmt.Errorf("%s: %s", c.Type, c.Message)
			}
		}
		return nil
	})
	for c, gen := range made {
		d, err := getDeployment(ctx, v, c)
		if err != nil || d.Generation != gen || d.Spec.Template.Annotations[workload.PasswordAnnotation] != "" {
			t.Fatalf("%s once its Secret was seen: %v, generation %d (was %d), annotations %v; want it as it was made", c, err, d.Generation, gen, d.Spec.Template.Annotations)
		}
	}
	if err := apiServer.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: workload.RotationJobName(v.Name)}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("rotation Job of a new database: %v, want none", err)
	}

	setDatabasePassword(t, v, "second", "first")
	j := rotationJob(t, v, "second")
	waitCondition(t, v, v1alpha1.ConditionDatabasePasswordRotated, workload.ReasonRotating, "setting the new database password")
	c := j.Spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if env["PGHOST"].Value != "v1-postgres" || env["PGPASSWORD"].ValueFrom.SecretKeyRef.Key != cluster.PreviousDatabasePasswordKey ||
		env["NEW_PASSWORD"].ValueFrom.SecretKeyRef.Key != "password" || j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever ||
		len(j.OwnerReferences) != 1 || j.OwnerReferences[0].Name != v.Name {
		t.Fatalf("rotation Job: env %+v, owners %+v", env, j.OwnerReferences)
	}
	waitAppsOn(t, v, "") // not before the Job succeeded
	finish(t, j, true)
	waitAppsOn(t, v, "second")
	waitCondition(t, v, v1alpha1.ConditionDatabasePasswordRotated, workload.ReasonRotated, "takes the new password")

	// The next edit's rotation replaces the finished Job; it fails.
	setDatabasePassword(t, v, "third", "second")
	j = rotationJob(t, v, "third")
	finish(t, j, false)
	waitCondition(t, v, v1alpha1.ConditionDatabasePasswordRotated, workload.ReasonRotationFailed, "Job v1-database-password failed (Job has reached the specified backoff limit): the database and the apps keep the old password")
	waitAppsOn(t, v, "second")
	d := &appsv1.Deployment{}
	if err := apiServer.Get(ctx, key(v, workload.WalletUI), d); err != nil || d.Spec.Template.Annotations[workload.PasswordAnnotation] != "" {
		t.Errorf("wallet UI template: %v %v, want no password digest (it does not log in to the database)", err, d.Spec.Template.Annotations)
	}
}

// A validator whose apps' templates carry no digest yet (made by an older
// version) is rotated too when an edit changes its password: its apps do
// not restart before the database takes the new one.
func TestControllerRotatesPasswordOfOlderValidator(t *testing.T) {
	v := create(t, nil)
	writeReads(t, v)
	eventually(t, "the validator app", func(ctx context.Context) error {
		_, err := getDeployment(ctx, v, workload.ValidatorApp)
		return err
	})
	setDatabasePassword(t, v, "second", "first")
	rotationJob(t, v, "second")
	d, err := getDeployment(context.Background(), v, workload.ValidatorApp)
	if err != nil || d.Spec.Template.Annotations[workload.PasswordAnnotation] != "" {
		t.Fatalf("validator app template while rotating: %v %v, want no digest", err, d.Spec.Template.Annotations)
	}
}
