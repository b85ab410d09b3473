package cluster

import (
	"strings"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// validatorState is the validator's state as its resource's fields say.
func validatorState(v *v1alpha1.Validator) domain.ValidatorState {
	phase := domain.PhasePending
	switch p := domain.Phase(v.Status.Phase); p {
	case domain.PhasePending, domain.PhaseRunning, domain.PhaseCompleted:
		phase = p
	}
	return domain.ValidatorState{
		Phase:           phase,
		DatabaseRunning: v.Status.DatabaseReady && !v.Spec.ExternalDatabase,
		DisableUserEdit: strings.EqualFold(v.Annotations[domain.DisableUserEditAnnotation], "true"),
	}
}
