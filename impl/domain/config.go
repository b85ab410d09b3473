package domain

import (
	"fmt"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// A validator's configuration is the Validator resource's typed spec, which
// the database stores too; these aliases keep the domain's names for it.
type (
	ValidatorConfig      = v1alpha1.ValidatorConfig
	WrittenSecrets       = v1alpha1.WrittenSecrets
	Auth                 = v1alpha1.Auth
	Cluster              = v1alpha1.Cluster
	App                  = v1alpha1.App
	Workload             = v1alpha1.Workload
	Synchronizer         = v1alpha1.Synchronizer
	Metrics              = v1alpha1.Metrics
	Migration            = v1alpha1.Migration
	IdentitiesBackup     = v1alpha1.IdentitiesBackup
	IdentitiesImport     = v1alpha1.IdentitiesImport
	PruneScheduleRequest = v1alpha1.PruneScheduleRequest
	TopUp                = v1alpha1.TopUp
	ParticipantNode      = v1alpha1.ParticipantNode
	Database             = v1alpha1.Database
	DatabaseWorkload     = v1alpha1.DatabaseWorkload
	WalletSweep          = v1alpha1.WalletSweep
)

// ValidatorConfigVersion is the version of the stored format of
// ValidatorConfig that this server writes.
const ValidatorConfigVersion = v1alpha1.ValidatorConfigVersion

// ErrConfigVersion is the failure to decode a configuration written in a
// version this server does not know (by a newer server).
var ErrConfigVersion = v1alpha1.ErrConfigVersion

// EncodeValidatorConfig is the stored form of c (v1alpha1.EncodeValidatorConfig).
func EncodeValidatorConfig(c ValidatorConfig) ([]byte, error) {
	return v1alpha1.EncodeValidatorConfig(c)
}

// DecodeValidatorConfig reads a stored configuration (v1alpha1.DecodeValidatorConfig).
func DecodeValidatorConfig(b []byte) (ValidatorConfig, error) {
	return v1alpha1.DecodeValidatorConfig(b)
}

// Written tells which of the validator's Secrets s writes.
func (s ValidatorSecrets) Written() WrittenSecrets {
	return WrittenSecrets{
		Onboarding:    s.OnboardingSecret != "",
		LedgerAPIAuth: s.LedgerAPIClientSecret != "",
		Database:      s.DatabasePassword != "",
	}
}

// Config decodes v.Spec.
func (v Validator) Config() (ValidatorConfig, error) {
	c, err := DecodeValidatorConfig(v.Spec)
	if err != nil {
		return ValidatorConfig{}, fmt.Errorf("validator %q: %w", v.Name, err)
	}
	return c, nil
}

// NonZero is a pointer to v, or nil for v's zero value: the API answers
// and the Validator resource give a zero value (Kubernetes' default) as
// absent.
func NonZero[T comparable](v T) *T {
	if v == *new(T) {
		return nil
	}
	return &v
}
