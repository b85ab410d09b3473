package v1alpha1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The layout of stored versions 0 and 1, kept only to decode them: the
// fields that differ from version 2 shadow those of storedConfig, the rest
// (environment variables included: release 1.11's EnvVar has the JSON of
// corev1.EnvVar) decode as in version 2. convert turns one into the current
// types as the workload controller used to read it, so that a converted
// validator runs the same workloads.

// +kubebuilder:object:generate=false
type legacyConfig struct {
	storedConfig
	Phase            *string                 `json:"phase,omitempty"`
	Cluster          legacyCluster           `json:"clusterConfig"`
	Participant      legacyApp               `json:"participant"`
	DatabaseWorkload *legacyDatabaseWorkload `json:"sqlDbConfig,omitempty"`
}

// +kubebuilder:object:generate=false
type legacyCluster struct {
	Cluster
	NameService  legacyApp  `json:"appInfoLedgerNameService"`
	ValidatorApp legacyApp  `json:"appInfoValidator"`
	Wallet       *legacyApp `json:"appInfoWallet,omitempty"`
}

// +kubebuilder:object:generate=false
type legacyApp struct {
	EnvVars   []corev1.EnvVar `json:"envVars"`
	Resources *ResourcesV1    `json:"resources,omitempty"`
}

// +kubebuilder:object:generate=false
type legacyDatabaseWorkload struct {
	Args         *[]string            `json:"args,omitempty"`
	Image        *string              `json:"image,omitempty"`
	Resources    *ResourcesV1         `json:"resources,omitempty"`
	VolumeMounts *[]legacyVolumeMount `json:"volumeMounts,omitempty"`
	Volumes      *[]legacyVolume      `json:"volumes,omitempty"`
}

// +kubebuilder:object:generate=false
type legacyVolumeMount struct {
	Name     *string `json:"name,omitempty"`
	Path     *string `json:"path,omitempty"`
	ReadOnly *bool   `json:"readOnly,omitempty"`
	SubPath  *string `json:"subPath,omitempty"`
}

// legacyVolume keeps only the emptyDir of its own: the other sources are
// stored in corev1's JSON.
//
// +kubebuilder:object:generate=false
type legacyVolume struct {
	Name      string                        `json:"name,omitempty"`
	ConfigMap *corev1.ConfigMapVolumeSource `json:"configMap,omitempty"`
	EmptyDir  *struct {
		Medium    *string `json:"medium,omitempty"`
		SizeLimit *struct {
			Amount *string `json:"amount,omitempty"`
			Format *string `json:"format,omitempty"`
		} `json:"sizeLimit,omitempty"`
	} `json:"emptyDir,omitempty"`
	HostPath              *corev1.HostPathVolumeSource              `json:"hostPath,omitempty"`
	PersistentVolumeClaim *corev1.PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	Secret                *corev1.SecretVolumeSource                `json:"secret,omitempty"`
}

// convert drops the phase (the status holds it) and converts the rest.
func (l legacyConfig) convert() ValidatorConfig {
	c := ValidatorConfig(l.storedConfig)
	// Earlier servers documented imageRepo with a component (…/docker/validator-app)
	// and appended every component to it, naming images that do not exist: it is
	// read as the registry prefix Splice's charts mean (docs/decisions.md).
	c.ImageRepo = strings.TrimSuffix(c.ImageRepo, "/validator-app")
	c.Cluster = l.Cluster.Cluster
	c.Cluster.NameService = l.Cluster.NameService.convert()
	c.Cluster.ValidatorApp = l.Cluster.ValidatorApp.convert()
	if l.Cluster.Wallet != nil {
		c.Cluster.Wallet = ptr.To(l.Cluster.Wallet.convert())
	}
	c.Participant = l.Participant.convert()
	if d := l.DatabaseWorkload; d != nil {
		c.DatabaseWorkload = &DatabaseWorkload{Args: d.Args, Image: d.Image, Workload: d.Resources.Workload(nil)}
		if d.VolumeMounts != nil {
			mounts := make([]corev1.VolumeMount, 0, len(*d.VolumeMounts))
			for _, m := range *d.VolumeMounts {
				mounts = append(mounts, corev1.VolumeMount{Name: ptr.Deref(m.Name, ""), MountPath: ptr.Deref(m.Path, ""), ReadOnly: ptr.Deref(m.ReadOnly, false), SubPath: ptr.Deref(m.SubPath, "")})
			}
			c.DatabaseWorkload.VolumeMounts = &mounts
		}
		if d.Volumes != nil {
			vols := make([]corev1.Volume, 0, len(*d.Volumes))
			for _, v := range *d.Volumes {
				if vol, ok := v.convert(); ok {
					vols = append(vols, vol)
				}
			}
			c.DatabaseWorkload.Volumes = &vols
		}
	}
	return c
}

func (a legacyApp) convert() App {
	return App{EnvVars: a.EnvVars, Workload: a.Resources.Workload(nil)}
}

// ResourcesV1 is release 1.11's resources object, the layout versions 0
// and 1 stored; the API maps its payload through it too.
//
// +kubebuilder:object:generate=false
type ResourcesV1 struct {
	CPULimit        *string `json:"cpuLimit,omitempty"`
	CPURequest      *string `json:"cpuRequested,omitempty"`
	ImagePullSecret *string `json:"imagePullSecret,omitempty"`
	MemoryLimit     *string `json:"memoryLimit,omitempty"`
	MemoryRequest   *string `json:"memoryRequested,omitempty"`
	Replicas        *int32  `json:"replicas,omitempty"`
}

// Workload is r in the current types; a nil r is none. A quantity that
// does not parse is left out and, unless bad is nil, reported by its
// release 1.11 key. Converting a stored version 0 or 1 passes a nil bad:
// the API never checked the quantities before version 2, and the workload
// controller left those that do not parse out.
func (r *ResourcesV1) Workload(bad func(key, value string)) Workload {
	if r == nil {
		return Workload{}
	}
	res := &corev1.ResourceRequirements{}
	set := func(list *corev1.ResourceList, name corev1.ResourceName, key string, s *string) {
		if s == nil {
			return
		}
		q, err := resource.ParseQuantity(*s)
		if err != nil {
			if bad != nil {
				bad(key, *s)
			}
			return
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = q
	}
	set(&res.Requests, corev1.ResourceCPU, "cpuRequested", r.CPURequest)
	set(&res.Requests, corev1.ResourceMemory, "memoryRequested", r.MemoryRequest)
	set(&res.Limits, corev1.ResourceCPU, "cpuLimit", r.CPULimit)
	set(&res.Limits, corev1.ResourceMemory, "memoryLimit", r.MemoryLimit)
	w := Workload{Resources: res, Replicas: r.Replicas}
	if s := ptr.Deref(r.ImagePullSecret, ""); s != "" {
		w.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s}}
	}
	return w
}

// convert is the volume with its first source in the order the workload
// controller read them; a volume without a source was left out (false).
func (v legacyVolume) convert() (corev1.Volume, bool) {
	vol := corev1.Volume{Name: v.Name}
	switch {
	case v.ConfigMap != nil:
		vol.ConfigMap = v.ConfigMap
	case v.Secret != nil:
		vol.Secret = v.Secret
	case v.EmptyDir != nil:
		vol.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium(ptr.Deref(v.EmptyDir.Medium, ""))}
		if l := v.EmptyDir.SizeLimit; l != nil {
			if q, err := resource.ParseQuantity(ptr.Deref(l.Amount, "") + ptr.Deref(l.Format, "")); err == nil {
				vol.EmptyDir.SizeLimit = &q
			}
		}
	case v.HostPath != nil:
		vol.HostPath = v.HostPath
		if t := v.HostPath.Type; t != nil && *t == "" {
			vol.HostPath.Type = nil // an empty type was left out
		}
	case v.PersistentVolumeClaim != nil:
		vol.PersistentVolumeClaim = v.PersistentVolumeClaim
	default:
		return vol, false
	}
	return vol, true
}
