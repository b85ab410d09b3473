package management

import (
	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The explicit mapping between the release 1.11 wire types and the stored
// domain.ValidatorConfig, field by field: a change of the contract does not
// change what is stored unless this file says so (mapping_test.go fails
// when a field of the payload is not carried over).

// configFromCreate is the configuration a create payload asks for, without
// its secret values (splitSecrets takes those).
func configFromCreate(dto managementapi.ValidatorDto) domain.ValidatorConfig {
	return domain.ValidatorConfig{
		Version:            domain.ValidatorConfigVersion,
		Name:               dto.Name,
		ImageRepo:          dto.ImageRepo,
		ImageTag:           dto.ImageTag,
		CustomAuth:         clone(dto.CustomAuth),
		Phase:              mapPtr(dto.Phase, func(p managementapi.Phase) domain.Phase { return domain.Phase(p) }),
		Auth:               mapPtr(dto.Auth, toAuth),
		Cluster:            toCluster(dto.ClusterConfig),
		ParticipantNode:    toParticipantNode(dto.ClusterParticipantConfig),
		Participant:        toApp(dto.Participant),
		EnvVars:            mapSlicePtr(dto.EnvVars, toEnvVar),
		Database:           mapPtr(dto.DatabaseConfig, toDatabase),
		DatabaseWorkload:   mapPtr(dto.SqlDbConfig, toDatabaseWorkload),
		LegacyDatabaseUser: clone(dto.SqlDbUser),
	}
}

// configResponse is the part of a validator's response that its
// configuration gives; response adds what the row and the naming
// conventions give.
func configResponse(c domain.ValidatorConfig) managementapi.ValidatorResponseDto {
	cc := c.Cluster
	r := managementapi.ValidatorResponseDto{
		ImageRepo:                ptr(c.ImageRepo),
		ImageTag:                 ptr(c.ImageTag),
		ScanAddress:              ptr(cc.ScanAddress),
		ContactPoint:             clone(cc.ContactPoint),
		DisabledWallet:           clone(cc.DisabledWallet),
		DisableProbes:            clone(cc.DisableProbes),
		TopUp:                    mapPtr(cc.TopUp, fromTopUp),
		AppInfoValidator:         ptr(fromApp(cc.ValidatorApp)),
		AppInfoLedgerNameService: ptr(fromApp(cc.NameService)),
		AppInfoWallet:            mapPtr(cc.Wallet, fromApp),
		ParticipantInfo:          ptr(fromApp(c.Participant)),
		EnvVars:                  mapSlicePtr(c.EnvVars, fromEnvVar),
		ExposeLedgerApi:          clone(c.ParticipantNode.ExposeLedgerAPI),
		PrivateJsonApi:           clone(c.ParticipantNode.PrivateJSONAPI),
		SqlDbConfig:              mapPtr(c.DatabaseWorkload, fromDatabaseWorkload),
		SqlDbUser:                clone(c.LegacyDatabaseUser),
		DatabaseConfig:           mapPtr(c.Database, fromDatabase),
	}
	if imp := cc.IdentitiesImport; imp != nil {
		r.ParticipantIdentitiesDumpSecretName = ptr(imp.SecretName)
	}
	if len(c.WalletSweeps) > 0 {
		r.WalletSweeps = ptr(mapSlice(c.WalletSweeps, fromWalletSweep))
	}
	// A list in a response is never null: the contract requires arrays.
	for _, a := range []*managementapi.AppInfoDto{r.AppInfoValidator, r.AppInfoLedgerNameService, r.AppInfoWallet, r.ParticipantInfo} {
		if a != nil && a.EnvVars == nil {
			a.EnvVars = []managementapi.EnvVar{}
		}
	}
	return r
}

// applyEdit changes v and c as edit says and returns the secret values it
// carries. It refuses changes to immutable fields, naming the request field.
func applyEdit(v *domain.Validator, c *domain.ValidatorConfig, edit managementapi.ValidatorEditDto) (domain.ValidatorSecrets, error) {
	var secrets domain.ValidatorSecrets
	bad := checkImage(edit.ImageRepo, edit.ImageTag)
	if edit.ImageRepo != nil {
		c.ImageRepo = *edit.ImageRepo
	}
	if edit.ImageTag != nil {
		c.ImageTag = *edit.ImageTag
	}
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
		c.Cluster.Migration = toMigration(cc.Migration)
		if cc.ScanAddress != nil {
			c.Cluster.ScanAddress = *cc.ScanAddress
		}
		if cc.ContactPoint != nil {
			c.Cluster.ContactPoint = clone(cc.ContactPoint)
		}
		if cc.TopUp != nil {
			c.Cluster.TopUp = mapPtr(cc.TopUp, toTopUp)
		}
		if cc.DisableProbes != nil {
			c.Cluster.DisableProbes = clone(cc.DisableProbes)
		}
		editAppInfo(&c.Cluster.ValidatorApp, cc.AppInfoValidator)
		editAppInfo(&c.Cluster.NameService, cc.AppInfoLedgerNameService)
		if cc.AppInfoWallet != nil {
			if c.Cluster.Wallet == nil {
				c.Cluster.Wallet = &domain.App{EnvVars: []domain.EnvVar{}}
			}
			editAppInfo(c.Cluster.Wallet, cc.AppInfoWallet)
		}
		if cc.WalletSweeps != nil {
			c.WalletSweeps = mapSlice(*cc.WalletSweeps, toWalletSweep)
		}
	}
	editAppInfo(&c.Participant, edit.Participant)
	if edit.CleanRestoreData != nil {
		c.CleanRestoreData = *edit.CleanRestoreData
	}
	if edit.ExposeLedgerApi != nil {
		c.ParticipantNode.ExposeLedgerAPI = clone(edit.ExposeLedgerApi)
	}
	if edit.PrivateJsonApi != nil {
		c.ParticipantNode.PrivateJSONAPI = clone(edit.PrivateJsonApi)
	}
	if db := edit.DatabaseConfig; db != nil {
		external := db.External != nil && *db.External
		if db.External != nil && external != v.ExternalDatabase {
			bad = append(bad, domain.Invalid("databaseConfig.external", "cannot change between an internal and an external database"))
		}
		next := toDatabase(*db)
		next.External = ptr(v.ExternalDatabase)
		if db.Password != nil {
			secrets.DatabasePassword = *db.Password
		}
		c.Database = &next
	}
	if edit.SqlDbConfig != nil {
		c.DatabaseWorkload = mapPtr(edit.SqlDbConfig, toDatabaseWorkload)
	}
	if v.ExternalDatabase && c.Database != nil {
		bad = append(bad, externalDatabaseAddress(fromDatabase(*c.Database))...)
	}
	if len(bad) > 0 {
		return secrets, bad
	}
	return secrets, nil
}

// editAppInfo applies an AppInfoEditDto: envVars replaces the list,
// envVarsDelete removes variables by name, resources replaces.
func editAppInfo(a *domain.App, e *managementapi.AppInfoEditDto) {
	if e == nil {
		return
	}
	if e.EnvVars != nil {
		a.EnvVars = append([]domain.EnvVar{}, mapSlice(*e.EnvVars, toEnvVar)...)
	}
	if e.EnvVarsDelete != nil {
		drop := map[string]bool{}
		for _, d := range *e.EnvVarsDelete {
			if d.Name != nil {
				drop[*d.Name] = true
			}
		}
		kept := a.EnvVars[:0:0]
		for _, ev := range a.EnvVars {
			if ev.Name == nil || !drop[*ev.Name] {
				kept = append(kept, ev)
			}
		}
		a.EnvVars = kept
	}
	if e.Resources != nil {
		a.Resources = mapPtr(e.Resources, toResources)
	}
}

// Wire → domain.

func toAuth(a managementapi.ValidatorAuthDto) domain.Auth {
	// LedgerApiClientSecret is a secret value: never stored.
	return domain.Auth{
		Audience:          a.Audience,
		NameServiceClient: a.CnsClientId,
		JWKSURL:           clone(a.JwksUrl),
		LedgerAPIClient:   a.LedgerApiClientId,
		LedgerAPIUser:     a.LedgerApiUser,
		OIDCAuthorityURL:  clone(a.OidcAuthorityUrl),
		OIDCConfigURL:     clone(a.OidcConfigUrl),
		WalletClient:      a.WalletClientId,
		WalletUser:        a.WalletUser,
	}
}

func toCluster(c managementapi.ClusterConfigDto) domain.Cluster {
	return domain.Cluster{
		AdditionalConfig:         clone(c.AdditionalConfigOther),
		AdditionalUsersEnvVars:   mapSlicePtr(c.AdditionalUsersEnvVars, toEnvVar),
		AppDars:                  clone(c.AppDars),
		NameService:              toApp(c.AppInfoLedgerNameService),
		ValidatorApp:             toApp(c.AppInfoValidator),
		Wallet:                   mapPtr(c.AppInfoWallet, toApp),
		ContactPoint:             clone(c.ContactPoint),
		SynchronizerURL:          clone(c.DecentralizedSynchronizerUrl),
		DefaultJVMOptions:        c.DefaultJvmOptions,
		DevNet:                   clone(c.DevNet),
		DisableProbes:            clone(c.DisableProbes),
		DisabledWallet:           clone(c.DisabledWallet),
		ExtraSynchronizers:       mapSlicePtr(c.ExtraDomains, toSynchronizer),
		FailOnAppVersionMismatch: clone(c.FailOnAppVersionMismatch),
		FixedTokens:              clone(c.FixedTokens),
		Metrics:                  mapPtr(c.Metrics, toMetrics),
		MigrateValidatorParty:    clone(c.MigrateValidatorParty),
		Migration:                toMigration(c.Migration),
		IdentitiesBackup:         mapPtr(c.ParticipantIdentitiesDumpBackup, toIdentitiesBackup),
		IdentitiesImport:         mapPtr(c.ParticipantIdentitiesDumpImport, toIdentitiesImport),
		PartyHint:                c.PartyHint,
		StorageClass:             clone(c.PvcVolumeStorageClass),
		ScanAddress:              c.ScanAddress,
		Prune:                    mapPtr(c.ScheduledPrune, toPruneRequest),
		SVSponsorAddress:         c.SvSponsorAddress,
		SVValidator:              clone(c.SvValidator),
		TopUp:                    mapPtr(c.TopUp, toTopUp),
		SequencersFromScan:       clone(c.UseSequencerConnectionsFromScan),
		WalletUserName:           clone(c.WalletUserName),
	}
}

func toApp(a managementapi.AppInfoDto) domain.App {
	return domain.App{EnvVars: mapSlice(a.EnvVars, toEnvVar), Resources: mapPtr(a.Resources, toResources)}
}

func toResources(r managementapi.ResourcesDto) domain.Resources {
	return domain.Resources{
		CPULimit:        clone(r.CpuLimit),
		CPURequest:      clone(r.CpuRequested),
		ImagePullSecret: clone(r.ImagePullSecret),
		MemoryLimit:     clone(r.MemoryLimit),
		MemoryRequest:   clone(r.MemoryRequested),
		Replicas:        clone(r.Replicas),
	}
}

func toEnvVar(e managementapi.EnvVar) domain.EnvVar {
	return domain.EnvVar{
		Name:  clone(e.Name),
		Value: clone(e.Value),
		ValueFrom: mapPtr(e.ValueFrom, func(s managementapi.EnvVarSource) domain.EnvVarSource {
			return domain.EnvVarSource{SecretKeyRef: mapPtr(s.SecretKeyRef, func(k managementapi.SecretKeySelector) domain.SecretKeySelector {
				return domain.SecretKeySelector{Key: clone(k.Key), Name: clone(k.Name), Optional: clone(k.Optional)}
			})}
		}),
	}
}

func toSynchronizer(d managementapi.ExtraDomainDto) domain.Synchronizer {
	return domain.Synchronizer{Alias: clone(d.Alias), URL: clone(d.Url)}
}

func toMetrics(m managementapi.MetricsDto) domain.Metrics {
	return domain.Metrics{Enable: clone(m.Enable), Interval: clone(m.Interval), Release: clone(m.Release)}
}

func toMigration(m managementapi.MigrationDto) domain.Migration {
	return domain.Migration{ID: m.Id, Migrating: clone(m.Migrating)}
}

func toIdentitiesBackup(b managementapi.IdentitiesDumpPeriodicBackupDto) domain.IdentitiesBackup {
	return domain.IdentitiesBackup{
		Interval:         b.BackupInterval,
		BucketName:       b.LocationBucketName,
		BucketProjectID:  b.LocationBucketProjectId,
		BucketSecretName: b.LocationBucketSecretName,
		Prefix:           b.LocationPrefix,
	}
}

func toIdentitiesImport(i managementapi.ParticipantIdentitiesImportDto) domain.IdentitiesImport {
	return domain.IdentitiesImport{SecretName: i.IdentitiesSecretName, NewParticipantIdentifier: i.NewParticipantIdentifier}
}

func toPruneRequest(p managementapi.ScheduledValidatorPruneDto) domain.PruneScheduleRequest {
	return domain.PruneScheduleRequest{Cron: p.Cron, MaxDuration: p.MaxDuration, NextRun: clone(p.NextRun), Retention: p.Retention}
}

func toTopUp(t managementapi.TopUpDto) domain.TopUp {
	return domain.TopUp{Enable: clone(t.Enable), MinTopupInterval: clone(t.MinTopupInterval), TargetThroughput: clone(t.TargetThroughput)}
}

func toParticipantNode(p managementapi.ClusterParticipantConfigDto) domain.ParticipantNode {
	return domain.ParticipantNode{
		DefaultJVMOptions:  clone(p.DefaultJvmOptions),
		EnableHealthProbes: clone(p.EnableHealthProbes),
		EnableKMS:          clone(p.EnableKms),
		ExposeLedgerAPI:    clone(p.ExposeLedgerApi),
		KMSServiceAccount:  clone(p.KmsServiceAccount),
		KMSValue:           clone(p.KmsValue),
		NodeIdentifier:     clone(p.NodeIdentifier),
		PrivateJSONAPI:     clone(p.PrivateJsonApi),
	}
}

func toDatabase(d managementapi.ValidatorDbConfigDto) domain.Database {
	// Password is a secret value: never stored.
	return domain.Database{External: clone(d.External), Hostname: clone(d.Hostname), Port: clone(d.Port), Username: clone(d.Username)}
}

func toDatabaseWorkload(s managementapi.SqlDbConfigDto) domain.DatabaseWorkload {
	return domain.DatabaseWorkload{
		Args:         mapSlicePtr(s.Args, func(a string) string { return a }),
		Image:        clone(s.Image),
		Resources:    mapPtr(s.Resources, toResources),
		VolumeMounts: mapSlicePtr(s.VolumeMounts, toVolumeMount),
		Volumes:      mapSlicePtr(s.Volumes, toVolume),
	}
}

func toVolumeMount(m managementapi.VolumeMount) domain.VolumeMount {
	return domain.VolumeMount{Name: clone(m.Name), Path: clone(m.Path), ReadOnly: clone(m.ReadOnly), SubPath: clone(m.SubPath)}
}

func toVolume(v managementapi.Volume) domain.Volume {
	return domain.Volume{
		ConfigMap: mapPtr(v.ConfigMap, func(c managementapi.ConfigMapVolumeSource) domain.ConfigMapVolume {
			return domain.ConfigMapVolume{DefaultMode: clone(c.DefaultMode), Items: mapSlicePtr(c.Items, toKeyToPath), Name: clone(c.Name), Optional: clone(c.Optional)}
		}),
		EmptyDir: mapPtr(v.EmptyDir, func(e managementapi.EmptyDirVolumeSource) domain.EmptyDirVolume {
			return domain.EmptyDirVolume{Medium: clone(e.Medium), SizeLimit: mapPtr(e.SizeLimit, func(s managementapi.SizeLimit) domain.SizeLimit {
				return domain.SizeLimit{Amount: clone(s.Amount), Format: clone(s.Format)}
			})}
		}),
		HostPath: mapPtr(v.HostPath, func(h managementapi.HostPathVolumeSource) domain.HostPathVolume {
			return domain.HostPathVolume{Path: clone(h.Path), Type: clone(h.Type)}
		}),
		Name: clone(v.Name),
		PersistentVolumeClaim: mapPtr(v.PersistentVolumeClaim, func(p managementapi.PersistentVolumeClaimVolumeSource) domain.ClaimVolume {
			return domain.ClaimVolume{ClaimName: clone(p.ClaimName), ReadOnly: clone(p.ReadOnly)}
		}),
		Secret: mapPtr(v.Secret, func(s managementapi.SecretVolumeSource) domain.SecretVolume {
			return domain.SecretVolume{DefaultMode: clone(s.DefaultMode), Items: mapSlicePtr(s.Items, toKeyToPath), Optional: clone(s.Optional), SecretName: clone(s.SecretName)}
		}),
	}
}

func toKeyToPath(k managementapi.KeyToPath) domain.KeyToPath {
	return domain.KeyToPath{Key: clone(k.Key), Mode: clone(k.Mode), Path: clone(k.Path)}
}

func toWalletSweep(w managementapi.WalletSweepDto) domain.WalletSweep {
	return domain.WalletSweep{
		MaxBalanceUSD:          w.MaxBalanceUSD,
		MinBalanceUSD:          w.MinBalanceUSD,
		ReceiverPartyID:        w.ReceiverPartyId,
		SenderPartyID:          w.SenderPartyId,
		UseTransferPreapproval: w.UseTransferPreapproval,
	}
}

// Domain → wire (responses).

func fromApp(a domain.App) managementapi.AppInfoDto {
	return managementapi.AppInfoDto{EnvVars: mapSlice(a.EnvVars, fromEnvVar), Resources: mapPtr(a.Resources, fromResources)}
}

func fromResources(r domain.Resources) managementapi.ResourcesDto {
	return managementapi.ResourcesDto{
		CpuLimit:        clone(r.CPULimit),
		CpuRequested:    clone(r.CPURequest),
		ImagePullSecret: clone(r.ImagePullSecret),
		MemoryLimit:     clone(r.MemoryLimit),
		MemoryRequested: clone(r.MemoryRequest),
		Replicas:        clone(r.Replicas),
	}
}

func fromEnvVar(e domain.EnvVar) managementapi.EnvVar {
	return managementapi.EnvVar{
		Name:  clone(e.Name),
		Value: clone(e.Value),
		ValueFrom: mapPtr(e.ValueFrom, func(s domain.EnvVarSource) managementapi.EnvVarSource {
			return managementapi.EnvVarSource{SecretKeyRef: mapPtr(s.SecretKeyRef, func(k domain.SecretKeySelector) managementapi.SecretKeySelector {
				return managementapi.SecretKeySelector{Key: clone(k.Key), Name: clone(k.Name), Optional: clone(k.Optional)}
			})}
		}),
	}
}

func fromTopUp(t domain.TopUp) managementapi.TopUpDto {
	return managementapi.TopUpDto{Enable: clone(t.Enable), MinTopupInterval: clone(t.MinTopupInterval), TargetThroughput: clone(t.TargetThroughput)}
}

func fromDatabase(d domain.Database) managementapi.ValidatorDbConfigDto {
	return managementapi.ValidatorDbConfigDto{External: clone(d.External), Hostname: clone(d.Hostname), Port: clone(d.Port), Username: clone(d.Username)}
}

func fromDatabaseWorkload(s domain.DatabaseWorkload) managementapi.SqlDbConfigDto {
	return managementapi.SqlDbConfigDto{
		Args:         mapSlicePtr(s.Args, func(a string) string { return a }),
		Image:        clone(s.Image),
		Resources:    mapPtr(s.Resources, fromResources),
		VolumeMounts: mapSlicePtr(s.VolumeMounts, fromVolumeMount),
		Volumes:      mapSlicePtr(s.Volumes, fromVolume),
	}
}

func fromVolumeMount(m domain.VolumeMount) managementapi.VolumeMount {
	return managementapi.VolumeMount{Name: clone(m.Name), Path: clone(m.Path), ReadOnly: clone(m.ReadOnly), SubPath: clone(m.SubPath)}
}

func fromVolume(v domain.Volume) managementapi.Volume {
	return managementapi.Volume{
		ConfigMap: mapPtr(v.ConfigMap, func(c domain.ConfigMapVolume) managementapi.ConfigMapVolumeSource {
			return managementapi.ConfigMapVolumeSource{DefaultMode: clone(c.DefaultMode), Items: mapSlicePtr(c.Items, fromKeyToPath), Name: clone(c.Name), Optional: clone(c.Optional)}
		}),
		EmptyDir: mapPtr(v.EmptyDir, func(e domain.EmptyDirVolume) managementapi.EmptyDirVolumeSource {
			return managementapi.EmptyDirVolumeSource{Medium: clone(e.Medium), SizeLimit: mapPtr(e.SizeLimit, func(s domain.SizeLimit) managementapi.SizeLimit {
				return managementapi.SizeLimit{Amount: clone(s.Amount), Format: clone(s.Format)}
			})}
		}),
		HostPath: mapPtr(v.HostPath, func(h domain.HostPathVolume) managementapi.HostPathVolumeSource {
			return managementapi.HostPathVolumeSource{Path: clone(h.Path), Type: clone(h.Type)}
		}),
		Name: clone(v.Name),
		PersistentVolumeClaim: mapPtr(v.PersistentVolumeClaim, func(p domain.ClaimVolume) managementapi.PersistentVolumeClaimVolumeSource {
			return managementapi.PersistentVolumeClaimVolumeSource{ClaimName: clone(p.ClaimName), ReadOnly: clone(p.ReadOnly)}
		}),
		Secret: mapPtr(v.Secret, func(s domain.SecretVolume) managementapi.SecretVolumeSource {
			return managementapi.SecretVolumeSource{DefaultMode: clone(s.DefaultMode), Items: mapSlicePtr(s.Items, fromKeyToPath), Optional: clone(s.Optional), SecretName: clone(s.SecretName)}
		}),
	}
}

func fromKeyToPath(k domain.KeyToPath) managementapi.KeyToPath {
	return managementapi.KeyToPath{Key: clone(k.Key), Mode: clone(k.Mode), Path: clone(k.Path)}
}

func fromWalletSweep(w domain.WalletSweep) managementapi.WalletSweepDto {
	return managementapi.WalletSweepDto{
		MaxBalanceUSD:          w.MaxBalanceUSD,
		MinBalanceUSD:          w.MinBalanceUSD,
		ReceiverPartyId:        w.ReceiverPartyID,
		SenderPartyId:          w.SenderPartyID,
		UseTransferPreapproval: w.UseTransferPreapproval,
	}
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
