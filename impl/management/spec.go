package management

import (
	"cmp"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// defaultDatabaseStorage is the internal database's volume when none is set
// (the create payload has no storage field; edits may grow it).
const defaultDatabaseStorage = "10Gi"

// splitSecrets returns the secret values dto carries. The stored
// configuration never holds them (configFromCreate leaves them out).
func splitSecrets(dto managementapi.ValidatorDto) domain.ValidatorSecrets {
	s := domain.ValidatorSecrets{OnboardingSecret: ptr.Deref(dto.OnboardingSecret, "")}
	if dto.Auth != nil {
		s.LedgerAPIClientSecret = ptr.Deref(dto.Auth.LedgerApiClientSecret, "")
	}
	if dto.DatabaseConfig != nil {
		s.DatabasePassword = ptr.Deref(dto.DatabaseConfig.Password, "")
	}
	// sqlDbPassword is the deprecated spelling of databaseConfig.password.
	s.DatabasePassword = cmp.Or(s.DatabasePassword, ptr.Deref(dto.SqlDbPassword, ""))
	return s
}

// references lists the cluster objects c names, each with the request
// field that named it (the 1.11 payload's path: the 400 that reports a
// missing object names what the caller wrote).
func references(c domain.ValidatorConfig) domain.References {
	var refs domain.References
	secret := func(field, name string) {
		if name != "" {
			refs.Secrets = append(refs.Secrets, domain.Reference{Field: field, Name: name})
		}
	}
	envVars := func(field string, vars []corev1.EnvVar) {
		for i, e := range vars {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name == "" {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			refs.SecretKeys = append(refs.SecretKeys, domain.SecretKeyReference{
				Field:    fmt.Sprintf("%s.%d.valueFrom.secretKeyRef", field, i),
				Name:     ref.Name,
				Key:      ref.Key,
				Optional: ptr.Deref(ref.Optional, false),
			})
		}
	}
	pullSecrets := func(field string, w domain.Workload) {
		for _, s := range w.ImagePullSecrets {
			secret(field+".resources.imagePullSecret", s.Name)
		}
	}
	app := func(field string, a *domain.App) {
		if a == nil {
			return
		}
		envVars(field+".envVars", a.EnvVars)
		pullSecrets(field, a.Workload)
	}
	envVars("envVars", ptr.Deref(c.EnvVars, nil))
	app("participant", &c.Participant)
	cc := c.Cluster
	app("clusterConfig.appInfoValidator", &cc.ValidatorApp)
	app("clusterConfig.appInfoLedgerNameService", &cc.NameService)
	app("clusterConfig.appInfoWallet", cc.Wallet)
	envVars("clusterConfig.additionalUsersEnvVars", ptr.Deref(cc.AdditionalUsersEnvVars, nil))
	if imp := cc.IdentitiesImport; imp != nil {
		secret("clusterConfig.participantIdentitiesDumpImport.identitiesSecretName", imp.SecretName)
	}
	if b := cc.IdentitiesBackup; b != nil {
		secret("clusterConfig.participantIdentitiesDumpBackup.locationBucketSecretName", b.BucketSecretName)
	}
	if sc := c.StorageClass(); sc != "" {
		refs.StorageClasses = append(refs.StorageClasses, domain.Reference{Field: "clusterConfig.pvcVolumeStorageClass", Name: sc})
	}
	if w := c.DatabaseWorkload; w != nil {
		pullSecrets("sqlDbConfig", w.Workload)
	}
	return refs
}

// response renders a stored validator as release 1.11 returns it. It never
// carries a secret value.
func (s *Server) response(v domain.Validator) (managementapi.ValidatorResponseDto, error) {
	c, err := v.Config()
	if err != nil {
		return managementapi.ValidatorResponseDto{}, err
	}
	r := viewed(v, c)
	r.Name = ptr.To(v.Name)
	r.Phase = ptr.To(managementapi.Phase(v.Phase))
	r.Immutable = ptr.To(v.Immutable)
	// The service addresses, by the Helm charts' convention (servicesOf).
	prefix, ns := s.servicesOf(v.Name)
	host := func(service string) *string { return ptr.To(domain.ServiceHost(prefix, service, ns)) }
	r.Participant, r.Application = host(domain.ServiceParticipant), host(domain.ServiceValidatorApp)
	r.ApplicationWallet, r.ApplicationLedgerNameServer = host(domain.ServiceWalletUI), host(domain.ServiceANSUI)
	r.LedgerApiAddress, r.JsonApiAddress = ptr.To(domain.LedgerAPIAddress(prefix, ns)), ptr.To(domain.JSONAPIURL(prefix, ns))
	r.ValidatorApiAddress = ptr.To(domain.ValidatorAppURL(prefix, ns))
	return r, nil
}

// viewed is the part of a validator's response that its list view holds:
// all but what changes without a write of the configuration (name, phase,
// disableUserEdit) and the addresses (they depend on the namespace).
func viewed(v domain.Validator, c domain.ValidatorConfig) managementapi.ValidatorResponseDto {
	r := configResponse(c)
	if c.WrittenSecrets.Onboarding {
		r.OnboardingSecretName = ptr.To(domain.OnboardingSecretName(v.Name))
	}
	r.CustomAuth = ptr.To(v.CustomAuth)
	r.MigrationId = ptr.To(strconv.FormatInt(int64(v.MigrationID), 10))
	r.MigrationMigrating = ptr.To(v.Migrating)
	storage := v.DatabaseStorage
	if storage == "" && !v.ExternalDatabase {
		storage = defaultDatabaseStorage
	}
	r.DatabaseStorage = domain.NonZero(storage)
	return r
}

// servicesOf is the prefix of a validator's Service names and their
// namespace (domain's address functions): <name>-<service> in the
// server's namespace, or in chart mode <service> in its release's.
func (s *Server) servicesOf(name string) (prefix, namespace string) {
	if s.Release != nil {
		return "", s.Release(name)
	}
	return name, s.Namespace
}
