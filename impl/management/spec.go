package management

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// storedSpec is domain.Validator.Spec, the Validator resource's
// spec.config: the release 1.11 ValidatorDto as the caller gave it (its
// fields at the top level, every secret value removed), plus what only an
// edit sets.
type storedSpec struct {
	managementapi.ValidatorDto
	WalletSweeps     []managementapi.WalletSweepDto `json:"walletSweeps,omitempty"`
	CleanRestoreData bool                           `json:"cleanRestoreData,omitempty"`
	// WrittenSecrets records which Secrets were written, so responses can name them.
	WrittenSecrets writtenSecrets `json:"writtenSecrets"`
}

type writtenSecrets struct {
	Onboarding    bool `json:"onboarding,omitempty"`
	LedgerAPIAuth bool `json:"ledgerApiAuth,omitempty"`
	Database      bool `json:"database,omitempty"`
}

// defaultDatabaseStorage is the internal database's volume when none is set
// (the create payload has no storage field; edits may grow it).
const defaultDatabaseStorage = "10Gi"

// splitSecrets removes every secret value from dto and returns them.
func splitSecrets(dto *managementapi.ValidatorDto) domain.ValidatorSecrets {
	var s domain.ValidatorSecrets
	if dto.OnboardingSecret != nil {
		s.OnboardingSecret = *dto.OnboardingSecret
		dto.OnboardingSecret = nil
	}
	if dto.Auth != nil && dto.Auth.LedgerApiClientSecret != nil {
		s.LedgerAPIClientSecret = *dto.Auth.LedgerApiClientSecret
		dto.Auth.LedgerApiClientSecret = nil
	}
	if dto.DatabaseConfig != nil && dto.DatabaseConfig.Password != nil {
		s.DatabasePassword = *dto.DatabaseConfig.Password
		dto.DatabaseConfig.Password = nil
	}
	// sqlDbPassword is the deprecated spelling of databaseConfig.password.
	if dto.SqlDbPassword != nil {
		if s.DatabasePassword == "" {
			s.DatabasePassword = *dto.SqlDbPassword
		}
		dto.SqlDbPassword = nil
	}
	return s
}

func (s *storedSpec) markWritten(sec domain.ValidatorSecrets) {
	w := &s.WrittenSecrets
	w.Onboarding = w.Onboarding || sec.OnboardingSecret != ""
	w.LedgerAPIAuth = w.LedgerAPIAuth || sec.LedgerAPIClientSecret != ""
	w.Database = w.Database || sec.DatabasePassword != ""
}

func decodeSpec(v domain.Validator) (storedSpec, error) {
	var s storedSpec
	if err := json.Unmarshal(v.Spec, &s); err != nil {
		return storedSpec{}, fmt.Errorf("validator %q: stored configuration: %w", v.Name, err)
	}
	return s, nil
}

func encodeSpec(s storedSpec) ([]byte, error) { return json.Marshal(s) }

// references lists the cluster objects dto names, each with the request
// field that named it.
func references(dto managementapi.ValidatorDto) domain.References {
	var refs domain.References
	secret := func(field string, name *string) {
		if name != nil && *name != "" {
			refs.Secrets = append(refs.Secrets, domain.Reference{Field: field, Name: *name})
		}
	}
	envVars := func(field string, vars []managementapi.EnvVar) {
		for i, e := range vars {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name == nil {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			r := domain.SecretKeyReference{
				Field: fmt.Sprintf("%s.%d.valueFrom.secretKeyRef", field, i),
				Name:  *ref.Name,
			}
			if ref.Key != nil {
				r.Key = *ref.Key
			}
			if ref.Optional != nil {
				r.Optional = *ref.Optional
			}
			refs.SecretKeys = append(refs.SecretKeys, r)
		}
	}
	appInfo := func(field string, a *managementapi.AppInfoDto) {
		if a == nil {
			return
		}
		envVars(field+".envVars", a.EnvVars)
		if a.Resources != nil {
			secret(field+".resources.imagePullSecret", a.Resources.ImagePullSecret)
		}
	}
	if dto.EnvVars != nil {
		envVars("envVars", *dto.EnvVars)
	}
	appInfo("participant", &dto.Participant)
	cc := dto.ClusterConfig
	appInfo("clusterConfig.appInfoValidator", &cc.AppInfoValidator)
	appInfo("clusterConfig.appInfoLedgerNameService", &cc.AppInfoLedgerNameService)
	appInfo("clusterConfig.appInfoWallet", cc.AppInfoWallet)
	if cc.AdditionalUsersEnvVars != nil {
		envVars("clusterConfig.additionalUsersEnvVars", *cc.AdditionalUsersEnvVars)
	}
	if imp := cc.ParticipantIdentitiesDumpImport; imp != nil {
		secret("clusterConfig.participantIdentitiesDumpImport.identitiesSecretName", &imp.IdentitiesSecretName)
	}
	if b := cc.ParticipantIdentitiesDumpBackup; b != nil {
		secret("clusterConfig.participantIdentitiesDumpBackup.locationBucketSecretName", &b.LocationBucketSecretName)
	}
	if sc := cc.PvcVolumeStorageClass; sc != nil && *sc != "" {
		refs.StorageClasses = append(refs.StorageClasses, domain.Reference{Field: "clusterConfig.pvcVolumeStorageClass", Name: *sc})
	}
	if dto.SqlDbConfig != nil && dto.SqlDbConfig.Resources != nil {
		secret("sqlDbConfig.resources.imagePullSecret", dto.SqlDbConfig.Resources.ImagePullSecret)
	}
	return refs
}

// addresses of a validator's services inside the cluster, by the Helm
// charts' naming convention.
type addresses struct{ name, namespace string }

func (a addresses) host(service string) string { return domain.ServiceHost(a.name, service, a.namespace) }

// response renders a stored validator as release 1.11 returns it. It never
// carries a secret value.
func (s *Server) response(v domain.Validator) (managementapi.ValidatorResponseDto, error) {
	spec, err := decodeSpec(v)
	if err != nil {
		return managementapi.ValidatorResponseDto{}, err
	}
	dto := spec.ValidatorDto
	cc := dto.ClusterConfig
	addr := addresses{name: v.Name, namespace: s.namespace}
	phase := managementapi.Phase(v.Phase)
	storage := v.DatabaseStorage
	if storage == "" && !v.ExternalDatabase {
		storage = defaultDatabaseStorage
	}
	r := managementapi.ValidatorResponseDto{
		Name:                        ptr(v.Name),
		Phase:                       &phase,
		ImageRepo:                   ptr(dto.ImageRepo),
		ImageTag:                    ptr(dto.ImageTag),
		CustomAuth:                  ptr(v.CustomAuth),
		Immutable:                   ptr(v.Immutable),
		MigrationId:                 ptr(strconv.FormatInt(int64(v.MigrationID), 10)),
		MigrationMigrating:          ptr(v.Migrating),
		ScanAddress:                 ptr(cc.ScanAddress),
		ContactPoint:                cc.ContactPoint,
		DisabledWallet:              cc.DisabledWallet,
		DisableProbes:               cc.DisableProbes,
		TopUp:                       cc.TopUp,
		AppInfoValidator:            ptr(cc.AppInfoValidator),
		AppInfoLedgerNameService:    ptr(cc.AppInfoLedgerNameService),
		AppInfoWallet:               cc.AppInfoWallet,
		ParticipantInfo:             ptr(dto.Participant),
		EnvVars:                     dto.EnvVars,
		ExposeLedgerApi:             dto.ClusterParticipantConfig.ExposeLedgerApi,
		PrivateJsonApi:              dto.ClusterParticipantConfig.PrivateJsonApi,
		SqlDbConfig:                 dto.SqlDbConfig,
		SqlDbUser:                   dto.SqlDbUser,
		Participant:                 ptr(addr.host("participant")),
		LedgerApiAddress:            ptr(fmt.Sprintf("%s:%d", addr.host(domain.ServiceParticipant), domain.LedgerAPIPort)),
		JsonApiAddress:              ptr(domain.JSONAPIURL(v.Name, s.namespace)),
		ValidatorApiAddress:         ptr(domain.ValidatorAppURL(v.Name, s.namespace)),
		Application:                 ptr(addr.host("validator-app")),
		ApplicationWallet:           ptr(addr.host("wallet-web-ui")),
		ApplicationLedgerNameServer: ptr(addr.host("ans-web-ui")),
	}
	if storage != "" {
		r.DatabaseStorage = &storage
	}
	if dto.DatabaseConfig != nil {
		db := *dto.DatabaseConfig
		db.Password = nil
		r.DatabaseConfig = &db
	}
	if spec.WrittenSecrets.Onboarding {
		r.OnboardingSecretName = ptr(domain.OnboardingSecretName(v.Name))
	}
	if imp := cc.ParticipantIdentitiesDumpImport; imp != nil {
		r.ParticipantIdentitiesDumpSecretName = ptr(imp.IdentitiesSecretName)
	}
	if len(spec.WalletSweeps) > 0 {
		r.WalletSweeps = &spec.WalletSweeps
	}
	// A list in a response is never null: the contract requires arrays.
	for _, a := range []*managementapi.AppInfoDto{r.AppInfoValidator, r.AppInfoLedgerNameService, r.AppInfoWallet, r.ParticipantInfo} {
		if a != nil && a.EnvVars == nil {
			a.EnvVars = []managementapi.EnvVar{}
		}
	}
	return r, nil
}

func ptr[T any](v T) *T { return &v }
