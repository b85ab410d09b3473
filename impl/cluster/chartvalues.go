package cluster

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// ValidatorResource is the Validator ApplyValidator makes of v and prune,
// over the cached one, for impl/charts.Checker to derive the charts' values.
func (k *Kube) ValidatorResource(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) (*v1alpha1.Validator, error) {
	spec, err := validatorSpec(v, prune)
	if err != nil {
		return nil, err
	}
	res := &v1alpha1.Validator{ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: k.namespace, Labels: k.validatorLabels(v.Name)}}
	if err := convert(spec, &res.Spec); err != nil {
		return nil, err
	}
	if cur := cached[v1alpha1.Validator](ctx, k, v.Name); cur != nil {
		res.UID = cur.UID
		res.Spec.Secrets = cur.Spec.Secrets.DeepCopy()
		res.Spec.ChartValues = cur.Spec.ChartValues.DeepCopy()
		if prune == nil {
			res.Spec.ParticipantPruningSchedule = cur.Spec.ParticipantPruningSchedule.DeepCopy()
		}
	}
	return res, nil
}
