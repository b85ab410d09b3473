package cluster

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// BackupScript is what a backup Job runs: pg_dumpall of the internal
// PostgreSQL, keeping the newest $MAX_BACKUPS; a failed dump removes nothing.
const BackupScript = `set -eu
dir="${BACKUP_DIR:-/backups}"
keep="${MAX_BACKUPS:-}"
case "$keep" in
''|*[!0-9]*) echo "MAX_BACKUPS must be a positive integer, got '$keep'" >&2; exit 2 ;;
esac
if [ "$keep" -lt 1 ]; then echo "MAX_BACKUPS must be at least 1" >&2; exit 2; fi
name="backup-$(date -u +%Y%m%dT%H%M%SZ).sql.gz"
tmp="$dir/.partial-$name"
trap 'rm -f "$tmp" "$tmp.sql"' EXIT
pg_dumpall --clean --if-exists --file="$tmp.sql"
gzip -c "$tmp.sql" > "$tmp"
mv "$tmp" "$dir/$name"
echo "backup written: $name"
ls -1 "$dir" | grep -E '^backup-[0-9]{8}T[0-9]{6}Z\.sql\.gz$' | sort -r | tail -n "+$((keep + 1))" |
while IFS= read -r old; do
  rm -f "$dir/$old"
  echo "old backup removed: $old"
done
`

const (
	backupMountPath     = "/backups"
	backupVolume        = "backups"
	backupTimeZone      = "Etc/UTC"
	databasePort        = "5432"
	defaultDatabaseUser = "postgres"
)

func ownerReference(validator string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: Group + "/" + Version, Kind: Kind, Name: validator, UID: uid, Controller: ptr.To(true)}
}

// backupCronJob is the backup CronJob of the Validator resource v for b.
func (k *Kube) backupCronJob(v *v1alpha1.Validator, b domain.BackupSchedule) (*batchv1.CronJob, error) {
	if v.Spec.ExternalDatabase && !b.Deleted {
		// The database is not ours: the state of the validator forbids it.
		return nil, domain.Conflict("validator %q uses an external database; backups cover the internal one only", v.Name)
	}
	user, host := defaultDatabaseUser, DatabaseHost(v.Name)
	if v.Spec.Database != nil && v.Spec.Database.User != "" {
		user = v.Spec.Database.User
	}
	if ns := v.Status.Namespace; ns != "" && ns != v.Namespace {
		// Chart mode: the database runs in the release's namespace; the Job
		// stays here, beside its volume and the database Secret.
		user, host = domain.ChartDatabaseUser, DatabaseHost(v.Name)+"."+ns
	}
	return &batchv1.CronJob{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            BackupCronJobName(v.Name),
			Namespace:       k.namespace,
			Labels:          labelsFor(v.Name),
			OwnerReferences: []metav1.OwnerReference{ownerReference(v.Name, v.UID)},
		},
		Spec: batchv1.CronJobSpec{
			Schedule:                   b.Cron,
			TimeZone:                   ptr.To(backupTimeZone),
			Suspend:                    ptr.To(b.Deleted),
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    ptr.To[int64](300),
			SuccessfulJobsHistoryLimit: ptr.To[int32](1),
			FailedJobsHistoryLimit:     ptr.To[int32](3),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labelsFor(v.Name)},
				Spec: batchv1.JobSpec{
					BackoffLimit: ptr.To[int32](1),
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labelsFor(v.Name)},
						Spec: corev1.PodSpec{
							RestartPolicy: corev1.RestartPolicyNever,
							Containers: []corev1.Container{{
								Name:    "backup",
								Image:   DefaultBackupImage,
								Command: []string{"/bin/sh", "-c", BackupScript},
								Env: []corev1.EnvVar{
									{Name: "BACKUP_DIR", Value: backupMountPath},
									{Name: "MAX_BACKUPS", Value: strconv.Itoa(int(b.MaxBackups))},
									{Name: "PGHOST", Value: host},
									{Name: "PGPORT", Value: databasePort},
									{Name: "PGUSER", Value: user},
									{Name: "PGPASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
										LocalObjectReference: corev1.LocalObjectReference{Name: domain.DatabaseSecretName(v.Name)},
										Key:                  DatabaseSecretKey,
									}}},
								},
								VolumeMounts: []corev1.VolumeMount{{Name: backupVolume, MountPath: backupMountPath}},
							}},
							Volumes: []corev1.Volume{{
								Name: backupVolume,
								VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
									ClaimName: BackupPVCName(v.Name),
								}},
							}},
						},
					},
				},
			},
		},
	}, nil
}

// backupPVC has no owner: backups outlive the validator.
func backupPVC(namespace, validator, storageClass string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: BackupPVCName(validator), Namespace: namespace, Labels: labelsFor(validator)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(DefaultBackupStorage)},
			},
		},
	}
	if storageClass != "" {
		pvc.Spec.StorageClassName = ptr.To(storageClass)
	}
	return pvc
}
