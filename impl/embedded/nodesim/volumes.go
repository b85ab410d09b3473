package nodesim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Volumes: the simulator provisions a pre-bound hostPath volume for each
// pending claim and lets kube-controller-manager's binder bind them, as for
// any provisioner (docs/decisions.md, "Volumes").

// Provisioner is the provisioner name of the simulator's storage class and
// volumes.
const Provisioner = "nodesim.validator-manager.io/hostpath"

// provisionedLabel marks the volumes the simulator made.
const provisionedLabel = "nodesim.validator-manager.io/provisioned"

const claimIndex = "claim"

func podClaims(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// syncClaim provisions a volume for a pending claim.
func (s *Simulator) syncClaim(ctx context.Context, key client.ObjectKey) (time.Duration, error) {
	c := &corev1.PersistentVolumeClaim{}
	if err := s.client.Get(ctx, key, c); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if c.DeletionTimestamp != nil || c.Spec.VolumeName != "" || c.Status.Phase != corev1.ClaimPending {
		return 0, nil
	}
	pvName := "pvc-" + string(c.UID)
	if err := s.client.Get(ctx, client.ObjectKey{Name: pvName}, &corev1.PersistentVolume{}); err == nil {
		return 0, nil
	}
	size := c.Spec.Resources.Requests[corev1.ResourceStorage]
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Labels:      map[string]string{provisionedLabel: "true"},
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   c.Spec.AccessModes,
			VolumeMode:                    c.Spec.VolumeMode,
			StorageClassName:              ptr.Deref(c.Spec.StorageClassName, ""),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: "/var/lib/nodesim/volumes/" + pvName,
			}},
		},
	}
	if len(pv.Spec.AccessModes) == 0 {
		pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return 0, client.IgnoreAlreadyExists(s.client.Create(ctx, pv))
}

// syncVolume deletes a volume the simulator made once its claim released
// it (the cache holds those only).
func (s *Simulator) syncVolume(ctx context.Context, key client.ObjectKey) (time.Duration, error) {
	pv := &corev1.PersistentVolume{}
	if err := s.client.Get(ctx, key, pv); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if pv.Labels[provisionedLabel] != "true" || pv.DeletionTimestamp != nil || pv.Status.Phase != corev1.VolumeReleased {
		return 0, nil
	}
	// A conflict, another volume of the name, is none: see reconciler.
	return 0, client.IgnoreNotFound(s.client.Delete(ctx, pv, client.Preconditions{UID: &pv.UID}))
}

// storageClass is the default class, so that claims that name none get one.
const storageClass = "standard"

// ensureStorageClass makes the default storage class when it is absent
// (read first: a create that finds it is still a write request).
func (s *Simulator) ensureStorageClass(ctx context.Context) error {
	if err := s.api.Get(ctx, client.ObjectKey{Name: storageClass}, &storagev1.StorageClass{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        storageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       Provisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	return client.IgnoreAlreadyExists(s.client.Create(ctx, sc))
}
