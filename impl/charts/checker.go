package charts

import (
	"context"
	"errors"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// Checker checks a validator's record, on create and edit through the API,
// against the charts of its version (management.Charts): the values
// derived for it must pass the charts' values.schema.json.
type Checker struct {
	Renderer *Renderer
	// Resource is the Validator resource the record makes (the cluster
	// gateway's Kube.ValidatorResource).
	Resource func(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) (*v1alpha1.Validator, error)
}

// CheckValidator fails with domain.Invalid, keyed <chart>.<value path>
// (splice-validator.nodeIdentifier; the chart's name alone for the values
// as a whole), with the chart's message, when the charts of v's imageTag
// are cached and refuse the values derived for it; nil when they accept
// them or are not cached (the workload controller shows what it finds
// when it pulls them).
func (c Checker) CheckValidator(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) error {
	res, err := c.Resource(ctx, v, prune)
	if err != nil {
		return err
	}
	err = c.Renderer.Check(ctx, res)
	var se *SchemaError
	if !errors.As(err, &se) {
		return err
	}
	field := se.Chart
	if se.Value != "" {
		field += "." + se.Value
	}
	return domain.Invalid(field, "chart %s %s refuses the values derived for this validator: %s", se.Chart, se.Version, se.Message)
}
