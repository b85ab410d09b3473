package workload

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
)

// Password rotation of the internal database (docs/decisions.md): when the
// database Secret's password digest differs from the apps' templates', a
// Job sets it on the running database, logged in with the previous one;
// only once it completed do the templates take the new digest, so that the
// apps restart with a password the database accepts.

// PasswordAnnotation on the apps' pod templates is the digest of the
// database password they start with.
const PasswordAnnotation = cluster.DatabasePasswordAnnotation

// Reasons of ConditionDatabasePasswordRotated.
const (
	ReasonRotating       = "Rotating"
	ReasonRotated        = "Rotated"
	ReasonRotationFailed = "RotationFailed"
)

// RotationJobName is the Job that sets a validator's database password.
func RotationJobName(validator string) string { return validator + "-database-password" }

// rotationScript sets NEW_PASSWORD unless the database takes it already (a
// Job run again), never on a command line; it retries while the server
// does not answer.
const rotationScript = `for i in $(seq 30); do
  PGPASSWORD="$NEW_PASSWORD" psql -tAc 'SELECT 1' >/dev/null 2>&1 && exit 0
  printf '%s\n' '\set pw ` + "`printenv NEW_PASSWORD`" + `' "ALTER ROLE CURRENT_USER PASSWORD :'pw';" |
    psql -v ON_ERROR_STOP=1 -q && exit 0
  sleep 2
done
exit 1`

// rotation is the digest the apps' templates carry ("": as they are) and
// the condition to show (nil: none).
type rotation struct {
	digest    string
	condition *metav1.Condition
}

// rotate decides and starts the rotation of v's password, from the cache
// (built-in layout only; otherwise it is the operator's).
func (r *Reconciler) rotate(ctx context.Context, v *v1alpha1.Validator, l *Layout) (rotation, error) {
	if v.Spec.ExternalDatabase || l.Namespace != v.Namespace {
		return rotation{}, nil
	}
	b := newLayout(v)
	app := &appsv1.Deployment{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: b.name(ValidatorApp)}, app)
	if err != nil && !apierrors.IsNotFound(err) {
		return rotation{}, err
	}
	newApp := apierrors.IsNotFound(err)
	have := app.Spec.Template.Annotations[PasswordAnnotation]
	ref := b.databasePassword().SecretKeyRef
	secret := &corev1.Secret{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: ref.Name}, secret); err != nil {
		// A Secret not there changes nothing: the pods wait for it.
		return rotation{digest: have}, client.IgnoreNotFound(err)
	}
	want := secret.Labels[cluster.DatabasePasswordLabel]
	_, previous := secret.Data[cluster.PreviousDatabasePasswordKey]
	switch {
	case want != "" && (have == want || newApp):
		// In step, or a new database, which starts with the Secret's
		// password. A rotation shown turns True.
		rot := rotation{digest: want}
		if meta.FindStatusCondition(v.Status.Conditions, v1alpha1.ConditionDatabasePasswordRotated) != nil {
			rot.condition = rotatedCondition(v)
		}
		return rot, nil
	case want == "" || !previous:
		// A Secret never edited holds the database's first password:
		// adding its digest would roll a new validator's workloads again.
		return rotation{digest: have}, nil
	}
	job := &batchv1.Job{}
	err = r.client.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: RotationJobName(v.Name)}, job)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.client.Create(ctx, b.rotationJob(ref, want)); err != nil && !apierrors.IsAlreadyExists(err) {
			return rotation{}, fmt.Errorf("create Job %s: %w", RotationJobName(v.Name), err)
		}
		return rotation{digest: have, condition: rotating(v)}, nil
	case err != nil:
		return rotation{}, err
	case job.Labels[cluster.DatabasePasswordLabel] != want:
		// An older rotation's: a new one follows its deletion's event.
		err := r.client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &job.UID})
		return rotation{digest: have, condition: rotating(v)}, client.IgnoreNotFound(err)
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return rotation{digest: want, condition: rotatedCondition(v)}, nil
		case batchv1.JobFailed:
			return rotation{digest: have, condition: rotationCondition(v, metav1.ConditionFalse, ReasonRotationFailed, fmt.Sprintf(
				"Job %s failed (%s): the database and the apps keep the old password; see the Job's pod log, then delete the Job to retry or give the password again with an edit",
				job.Name, c.Message))}, nil
		}
	}
	return rotation{digest: have, condition: rotating(v)}, nil
}

func rotating(v *v1alpha1.Validator) *metav1.Condition {
	return rotationCondition(v, metav1.ConditionFalse, ReasonRotating, "setting the new database password on the running database")
}

func rotatedCondition(v *v1alpha1.Validator) *metav1.Condition {
	return rotationCondition(v, metav1.ConditionTrue, ReasonRotated, "the running database takes the new password")
}

func rotationCondition(v *v1alpha1.Validator, status metav1.ConditionStatus, reason, message string) *metav1.Condition {
	return &metav1.Condition{Type: v1alpha1.ConditionDatabasePasswordRotated, Status: status, Reason: reason, Message: message, ObservedGeneration: v.Generation}
}

// rotationJob sets the database password to ref's, labelled with its
// digest; it runs once (a failure is shown, not retried).
func (b layout) rotationJob(ref *corev1.SecretKeySelector, digest string) *batchv1.Job {
	jobLabels := labels.Merge(b.labels(Postgres), map[string]string{cluster.DatabasePasswordLabel: digest})
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: RotationJobName(b.v.Name), Namespace: b.v.Namespace, Labels: jobLabels,
			OwnerReferences: []metav1.OwnerReference{b.owner()},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](300),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: jobLabels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{b.psql("rotate-password", rotationScript, secretKey(ref.Name, cluster.PreviousDatabasePasswordKey),
						corev1.EnvVar{Name: "NEW_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: ref.DeepCopy()}})},
				},
			},
		},
	}
}

// withPassword sets digest on the templates of the apps that log in to the
// database.
func withPassword(objs []client.Object, digest string) {
	if digest == "" {
		return
	}
	for _, o := range objs {
		d, ok := o.(*appsv1.Deployment)
		if ok && (d.Labels[ComponentLabel] == Participant || d.Labels[ComponentLabel] == ValidatorApp) {
			metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, PasswordAnnotation, digest)
		}
	}
}
