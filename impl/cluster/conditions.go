package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metaac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	validatorac "github.com/validator-manager/validator-manager/gen/applyconfiguration/apis/v1alpha1"
)

// conditionOwner owns the intent controller's conditions: conditions are a
// map keyed by type, so the workload controller's writes keep them.
const conditionOwner = "validator-manager-intent"

// CachedCondition is a copy of the cached Validator's condition of that type; nil: none.
func (k *Kube) CachedCondition(validator, typ string) *metav1.Condition {
	v := k.cachedValidator(validator)
	if v == nil {
		return nil
	}
	return meta.FindStatusCondition(v.Status.Conditions, typ).DeepCopy()
}

// ApplyCondition applies only condition c to the Validator's status; its
// lastTransitionTime stays while its status does not change.
func (k *Kube) ApplyCondition(ctx context.Context, validator string, c metav1.Condition) error {
	if cur := k.CachedCondition(validator, c.Type); cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.Now()
	}
	cond := metaac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
		WithMessage(c.Message).WithLastTransitionTime(c.LastTransitionTime)
	ac := validatorac.Validator(validator, k.namespace).WithStatus(validatorac.ValidatorStatus().WithConditions(cond))
	err := k.client.Status().Apply(ctx, ac, client.FieldOwner(conditionOwner), client.ForceOwnership)
	return translate(fmt.Sprintf("apply the %s condition of validator %q", c.Type, validator), err)
}
