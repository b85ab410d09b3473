package management

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The explicit mapping between the release 1.11 wire types and the stored
// domain.ValidatorConfig, field by field: a change of the contract does not
// change what is stored unless this file says so (mapping_test.go fails
// when a field of the payload is not carried over).

// configFromCreate is the configuration a create payload asks for, without
// its secret values (splitSecrets takes those) and its phase (the
// Validator's status is its phase). Bad values are refused
// (domain.Invalids), named by their request field.
func configFromCreate(dto managementapi.ValidatorDto) (domain.ValidatorConfig, error) {
	var bad domain.Invalids
	c := domain.ValidatorConfig{
		Version:            domain.ValidatorConfigVersion,
		Name:               dto.Name,
		ImageRepo:          dto.ImageRepo,
		ImageTag:           dto.ImageTag,
		CustomAuth:         clone(dto.CustomAuth),
		Auth:               mapPtr(dto.Auth, convert[domain.Auth]),
		Cluster:            toCluster(dto.ClusterConfig, &bad),
		ParticipantNode:    convert[domain.ParticipantNode](dto.ClusterParticipantConfig),
		Participant:        toApp("participant", dto.Participant, &bad),
		EnvVars:            mapSlicePtr(dto.EnvVars, toEnvVar),
		Database:           mapPtr(dto.DatabaseConfig, convert[domain.Database]),
		LegacyDatabaseUser: clone(dto.SqlDbUser),
	}
	if dto.SqlDbConfig != nil {
		c.DatabaseWorkload = ptr.To(toDatabaseWorkload(*dto.SqlDbConfig, &bad))
	}
	return c, bad.Err()
}

// configResponse is the part of a validator's response that its
// configuration gives; response adds what the row and the naming
// conventions give.
func configResponse(c domain.ValidatorConfig) managementapi.ValidatorResponseDto {
	cc := c.Cluster
	r := managementapi.ValidatorResponseDto{
		ImageRepo:                ptr.To(c.ImageRepo),
		ImageTag:                 ptr.To(c.ImageTag),
		ScanAddress:              ptr.To(cc.ScanAddress),
		ContactPoint:             clone(cc.ContactPoint),
		DisabledWallet:           clone(cc.DisabledWallet),
		DisableProbes:            clone(cc.DisableProbes),
		TopUp:                    mapPtr(cc.TopUp, convert[managementapi.TopUpDto]),
		AppInfoValidator:         ptr.To(fromApp(cc.ValidatorApp)),
		AppInfoLedgerNameService: ptr.To(fromApp(cc.NameService)),
		AppInfoWallet:            mapPtr(cc.Wallet, fromApp),
		ParticipantInfo:          ptr.To(fromApp(c.Participant)),
		EnvVars:                  mapSlicePtr(c.EnvVars, fromEnvVar),
		ExposeLedgerApi:          clone(c.ParticipantNode.ExposeLedgerAPI),
		PrivateJsonApi:           clone(c.ParticipantNode.PrivateJSONAPI),
		SqlDbConfig:              mapPtr(c.DatabaseWorkload, fromDatabaseWorkload),
		SqlDbUser:                clone(c.LegacyDatabaseUser),
		DatabaseConfig:           mapPtr(c.Database, convert[managementapi.ValidatorDbConfigDto]),
	}
	if imp := cc.IdentitiesImport; imp != nil {
		r.ParticipantIdentitiesDumpSecretName = ptr.To(imp.SecretName)
	}
	if len(c.WalletSweeps) > 0 {
		r.WalletSweeps = ptr.To(mapSlice(c.WalletSweeps, convert[managementapi.WalletSweepDto]))
	}
	return r
}

// applyEdit changes v and c as edit says and returns the secret values it
// carries. It refuses changes to immutable fields, naming the request field.
// An optional field the edit leaves out (nil) keeps its value (ptr.Deref, cmp.Or).
func applyEdit(v *domain.Validator, c *domain.ValidatorConfig, edit managementapi.ValidatorEditDto) (domain.ValidatorSecrets, error) {
	var secrets domain.ValidatorSecrets
	bad := checkImage(edit.ImageRepo, edit.ImageTag)
	c.ImageRepo = ptr.Deref(edit.ImageRepo, c.ImageRepo)
	c.ImageTag = ptr.Deref(edit.ImageTag, c.ImageTag)
	if edit.DatabaseStorage != nil {
		if v.ExternalDatabase {
			bad = append(bad, domain.Invalid("databaseStorage", "the validator uses an external database"))
		} else if err := checkGrow(v.DatabaseStorage, *edit.DatabaseStorage); err != nil {
			bad = append(bad, domain.Invalid("databaseStorage", "%v", err))
		} else {
			v.DatabaseStorage = *edit.DatabaseStorage
		}
	}
	if cc := edit.ClusterConfig; cc != nil {
		if cc.Migration.Id < v.MigrationID {
			bad = append(bad, domain.Invalid("clusterConfig.migration.id", "must not decrease (current %d)", v.MigrationID))
		}
		v.MigrationID = cc.Migration.Id
		v.Migrating = cc.Migration.Migrating != nil && *cc.Migration.Migrating
		c.Cluster.Migration = convert[domain.Migration](cc.Migration)
		c.Cluster.ScanAddress = ptr.Deref(cc.ScanAddress, c.Cluster.ScanAddress)
		c.Cluster.ContactPoint = cmp.Or(clone(cc.ContactPoint), c.Cluster.ContactPoint)
		c.Cluster.TopUp = cmp.Or(mapPtr(cc.TopUp, convert[domain.TopUp]), c.Cluster.TopUp)
		c.Cluster.DisableProbes = cmp.Or(clone(cc.DisableProbes), c.Cluster.DisableProbes)
		editAppInfo("clusterConfig.appInfoValidator", &c.Cluster.ValidatorApp, cc.AppInfoValidator, &bad)
		editAppInfo("clusterConfig.appInfoLedgerNameService", &c.Cluster.NameService, cc.AppInfoLedgerNameService, &bad)
		if cc.AppInfoWallet != nil {
			if c.Cluster.Wallet == nil {
				c.Cluster.Wallet = &domain.App{EnvVars: []corev1.EnvVar{}}
			}
			editAppInfo("clusterConfig.appInfoWallet", c.Cluster.Wallet, cc.AppInfoWallet, &bad)
		}
		if cc.WalletSweeps != nil {
			c.WalletSweeps = mapSlice(*cc.WalletSweeps, convert[domain.WalletSweep])
		}
	}
	editAppInfo("participant", &c.Participant, edit.Participant, &bad)
	c.CleanRestoreData = ptr.Deref(edit.CleanRestoreData, c.CleanRestoreData)
	c.ParticipantNode.ExposeLedgerAPI = cmp.Or(clone(edit.ExposeLedgerApi), c.ParticipantNode.ExposeLedgerAPI)
	c.ParticipantNode.PrivateJSONAPI = cmp.Or(clone(edit.PrivateJsonApi), c.ParticipantNode.PrivateJSONAPI)
	if db := edit.DatabaseConfig; db != nil {
		external := db.External != nil && *db.External
		if db.External != nil && external != v.ExternalDatabase {
			bad = append(bad, domain.Invalid("databaseConfig.external", "cannot change between an internal and an external database"))
		}
		next := convert[domain.Database](*db)
		next.External = ptr.To(v.ExternalDatabase)
		secrets.DatabasePassword = ptr.Deref(db.Password, "")
		c.Database = &next
	}
	if edit.SqlDbConfig != nil {
		c.DatabaseWorkload = ptr.To(toDatabaseWorkload(*edit.SqlDbConfig, &bad))
	}
	if v.ExternalDatabase && c.Database != nil {
		bad = append(bad, externalDatabaseAddress(convert[managementapi.ValidatorDbConfigDto](*c.Database))...)
	}
	return secrets, bad.Err()
}

// editAppInfo applies an AppInfoEditDto of the request field: envVars
// replaces the list, envVarsDelete removes variables by name, resources
// replaces.
func editAppInfo(field string, a *domain.App, e *managementapi.AppInfoEditDto, bad *domain.Invalids) {
	if e == nil {
		return
	}
	if e.EnvVars != nil {
		a.EnvVars = append([]corev1.EnvVar{}, mapSlice(*e.EnvVars, toEnvVar)...)
	}
	if e.EnvVarsDelete != nil {
		a.EnvVars = slices.DeleteFunc(a.EnvVars, func(ev corev1.EnvVar) bool {
			return slices.ContainsFunc(*e.EnvVarsDelete, func(d managementapi.EnvVar) bool { return d.Name != nil && *d.Name == ev.Name })
		})
	}
	if e.Resources != nil {
		a.Workload = toWorkload(field+".resources", e.Resources, bad)
	}
}

// Wire → domain.

// toCluster carries what the payload and the stored form share by name
// (convert); the applications and the environment variables, stored in
// Kubernetes' types, are mapped on their own over what convert made of them.
func toCluster(c managementapi.ClusterConfigDto, bad *domain.Invalids) domain.Cluster {
	cc := convert[domain.Cluster](c)
	cc.AdditionalUsersEnvVars = mapSlicePtr(c.AdditionalUsersEnvVars, toEnvVar)
	cc.NameService = toApp("clusterConfig.appInfoLedgerNameService", c.AppInfoLedgerNameService, bad)
	cc.ValidatorApp = toApp("clusterConfig.appInfoValidator", c.AppInfoValidator, bad)
	cc.Wallet = nil
	if c.AppInfoWallet != nil {
		cc.Wallet = ptr.To(toApp("clusterConfig.appInfoWallet", *c.AppInfoWallet, bad))
	}
	return cc
}

func toApp(field string, a managementapi.AppInfoDto, bad *domain.Invalids) domain.App {
	return domain.App{EnvVars: mapSlice(a.EnvVars, toEnvVar), Workload: toWorkload(field+".resources", a.Resources, bad)}
}

// toWorkload maps release 1.11's resources object of the request field:
// present (even empty) it gives Resources, so that the response shows it
// again.
func toWorkload(field string, r *managementapi.ResourcesDto, bad *domain.Invalids) domain.Workload {
	if r == nil {
		return domain.Workload{}
	}
	v1 := convert[v1alpha1.ResourcesV1](*r)
	return v1.Workload(func(key, value string) {
		*bad = append(*bad, domain.Invalid(field+"."+key, "must be a Kubernetes quantity such as 500m or 123Mi: %q", value))
	})
}

// toEnvVar keeps a value from a Secret's key only (the one source the
// contract has).
func toEnvVar(e managementapi.EnvVar) corev1.EnvVar {
	v := corev1.EnvVar{Name: ptr.Deref(e.Name, ""), Value: ptr.Deref(e.Value, "")}
	if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
		k := e.ValueFrom.SecretKeyRef
		v.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ptr.Deref(k.Name, "")},
			Key:                  ptr.Deref(k.Key, ""),
			Optional:             clone(k.Optional),
		}}
	}
	return v
}

func toDatabaseWorkload(s managementapi.SqlDbConfigDto, bad *domain.Invalids) domain.DatabaseWorkload {
	w := domain.DatabaseWorkload{
		Args:         mapSlicePtr(s.Args, func(a string) string { return a }),
		Image:        clone(s.Image),
		Workload:     toWorkload("sqlDbConfig.resources", s.Resources, bad),
		VolumeMounts: mapSlicePtr(s.VolumeMounts, toVolumeMount),
	}
	if s.Volumes != nil {
		vols := make([]corev1.Volume, len(*s.Volumes))
		for i, v := range *s.Volumes {
			vols[i] = toVolume(fmt.Sprintf("sqlDbConfig.volumes.%d", i), v, bad)
		}
		w.Volumes = &vols
	}
	return w
}

func toVolumeMount(m managementapi.VolumeMount) corev1.VolumeMount {
	return corev1.VolumeMount{
		Name: ptr.Deref(m.Name, ""), MountPath: ptr.Deref(m.Path, ""),
		ReadOnly: ptr.Deref(m.ReadOnly, false), SubPath: ptr.Deref(m.SubPath, ""),
	}
}

// toVolume refuses what Kubernetes would: a volume needs exactly one
// source, and a size limit is a quantity.
func toVolume(field string, v managementapi.Volume, bad *domain.Invalids) corev1.Volume {
	vol := corev1.Volume{Name: ptr.Deref(v.Name, "")}
	sources := 0
	if c := v.ConfigMap; c != nil {
		sources++
		vol.ConfigMap = ptr.To(convert[corev1.ConfigMapVolumeSource](*c))
	}
	if e := v.EmptyDir; e != nil {
		sources++
		vol.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium(ptr.Deref(e.Medium, ""))}
		if l := e.SizeLimit; l != nil {
			size := ptr.Deref(l.Amount, "") + ptr.Deref(l.Format, "")
			q, err := resource.ParseQuantity(size)
			if err != nil {
				*bad = append(*bad, domain.Invalid(field+".emptyDir.sizeLimit", "amount and format must make a Kubernetes quantity such as 1Gi: %q", size))
			} else {
				vol.EmptyDir.SizeLimit = &q
			}
		}
	}
	if h := v.HostPath; h != nil {
		sources++
		vol.HostPath = &corev1.HostPathVolumeSource{
			Path: ptr.Deref(h.Path, ""), Type: domain.NonZero(corev1.HostPathType(ptr.Deref(h.Type, ""))),
		}
	}
	if p := v.PersistentVolumeClaim; p != nil {
		sources++
		vol.PersistentVolumeClaim = ptr.To(convert[corev1.PersistentVolumeClaimVolumeSource](*p))
	}
	if s := v.Secret; s != nil {
		sources++
		vol.Secret = ptr.To(convert[corev1.SecretVolumeSource](*s))
	}
	if sources != 1 {
		*bad = append(*bad, domain.Invalid(field, "must have exactly one of configMap, emptyDir, hostPath, persistentVolumeClaim, secret (has %d)", sources))
	}
	return vol
}

// Domain → wire (responses): Kubernetes values go back to release 1.11's
// shapes, a quantity in its canonical form (0.5 reads 500m), an empty
// string or false as absent.

// fromApp answers no envVars as an empty list, never null: the contract
// requires arrays.
func fromApp(a domain.App) managementapi.AppInfoDto {
	return managementapi.AppInfoDto{EnvVars: append([]managementapi.EnvVar{}, mapSlice(a.EnvVars, fromEnvVar)...), Resources: fromWorkload(a.Workload)}
}

func fromWorkload(w domain.Workload) *managementapi.ResourcesDto {
	if w.Resources == nil && w.Replicas == nil && len(w.ImagePullSecrets) == 0 {
		return nil
	}
	r := &managementapi.ResourcesDto{Replicas: clone(w.Replicas)}
	if len(w.ImagePullSecrets) > 0 {
		r.ImagePullSecret = domain.NonZero(w.ImagePullSecrets[0].Name)
	}
	if res := w.Resources; res != nil {
		r.CpuRequested = quantity(res.Requests, corev1.ResourceCPU)
		r.MemoryRequested = quantity(res.Requests, corev1.ResourceMemory)
		r.CpuLimit = quantity(res.Limits, corev1.ResourceCPU)
		r.MemoryLimit = quantity(res.Limits, corev1.ResourceMemory)
	}
	return r
}

func quantity(list corev1.ResourceList, name corev1.ResourceName) *string {
	q, ok := list[name]
	if !ok {
		return nil
	}
	return ptr.To(q.String())
}

func fromEnvVar(e corev1.EnvVar) managementapi.EnvVar {
	v := managementapi.EnvVar{Name: domain.NonZero(e.Name), Value: domain.NonZero(e.Value)}
	if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
		k := e.ValueFrom.SecretKeyRef
		v.ValueFrom = &managementapi.EnvVarSource{SecretKeyRef: &managementapi.SecretKeySelector{
			Key: domain.NonZero(k.Key), Name: domain.NonZero(k.Name), Optional: clone(k.Optional),
		}}
	}
	return v
}

func fromDatabaseWorkload(s domain.DatabaseWorkload) managementapi.SqlDbConfigDto {
	return managementapi.SqlDbConfigDto{
		Args:         mapSlicePtr(s.Args, func(a string) string { return a }),
		Image:        clone(s.Image),
		Resources:    fromWorkload(s.Workload),
		VolumeMounts: mapSlicePtr(s.VolumeMounts, fromVolumeMount),
		Volumes:      mapSlicePtr(s.Volumes, fromVolume),
	}
}

func fromVolumeMount(m corev1.VolumeMount) managementapi.VolumeMount {
	return managementapi.VolumeMount{Name: domain.NonZero(m.Name), Path: domain.NonZero(m.MountPath), ReadOnly: domain.NonZero(m.ReadOnly), SubPath: domain.NonZero(m.SubPath)}
}

func fromVolume(v corev1.Volume) managementapi.Volume {
	out := managementapi.Volume{Name: domain.NonZero(v.Name)}
	if c := v.ConfigMap; c != nil {
		out.ConfigMap = &managementapi.ConfigMapVolumeSource{DefaultMode: clone(c.DefaultMode), Items: fromKeyToPaths(c.Items), Name: domain.NonZero(c.Name), Optional: clone(c.Optional)}
	}
	if e := v.EmptyDir; e != nil {
		out.EmptyDir = &managementapi.EmptyDirVolumeSource{Medium: domain.NonZero(string(e.Medium))}
		if e.SizeLimit != nil {
			amount, format := splitQuantity(e.SizeLimit.String())
			out.EmptyDir.SizeLimit = &managementapi.SizeLimit{Amount: domain.NonZero(amount), Format: domain.NonZero(format)}
		}
	}
	if h := v.HostPath; h != nil {
		out.HostPath = &managementapi.HostPathVolumeSource{
			Path: domain.NonZero(h.Path), Type: domain.NonZero(string(ptr.Deref(h.Type, ""))),
		}
	}
	if p := v.PersistentVolumeClaim; p != nil {
		out.PersistentVolumeClaim = &managementapi.PersistentVolumeClaimVolumeSource{ClaimName: domain.NonZero(p.ClaimName), ReadOnly: domain.NonZero(p.ReadOnly)}
	}
	if s := v.Secret; s != nil {
		out.Secret = &managementapi.SecretVolumeSource{DefaultMode: clone(s.DefaultMode), Items: fromKeyToPaths(s.Items), Optional: clone(s.Optional), SecretName: domain.NonZero(s.SecretName)}
	}
	return out
}

// splitQuantity splits a quantity's text into its number and its suffix
// (release 1.11's amount and format): 1Gi is 1 and Gi.
func splitQuantity(s string) (amount, format string) {
	i := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("+-.0123456789", r) })
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

func fromKeyToPaths(items []corev1.KeyToPath) *[]managementapi.KeyToPath {
	if items == nil {
		return nil
	}
	out := mapSlice(items, func(k corev1.KeyToPath) managementapi.KeyToPath {
		return managementapi.KeyToPath{Key: domain.NonZero(k.Key), Mode: clone(k.Mode), Path: domain.NonZero(k.Path)}
	})
	return &out
}

// convert maps a wire value to the type of the same JSON, or back (the
// stored form keeps release 1.11's field names); what only the payload has,
// such as a secret value, is never stored. A failure is a type that does not
// fit its pair.
func convert[B, A any](a A) B {
	var b B
	raw, err := json.Marshal(a)
	if err == nil {
		err = json.Unmarshal(raw, &b)
	}
	if err != nil {
		panic(fmt.Sprintf("management: %T does not map to %T: %v", a, b, err))
	}
	return b
}

// clone copies an optional value, so that the wire and the stored values
// never share memory.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func mapPtr[A, B any](p *A, f func(A) B) *B {
	if p == nil {
		return nil
	}
	v := f(*p)
	return &v
}

// mapSlice keeps nil apart from empty: the stored and returned JSON tell
// an absent list from an empty one.
func mapSlice[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i := range in {
		out[i] = f(in[i])
	}
	return out
}

func mapSlicePtr[A, B any](p *[]A, f func(A) B) *[]B {
	if p == nil {
		return nil
	}
	s := mapSlice(*p, f)
	return &s
}
