package charts

import (
	"context"
	"errors"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// Checker checks a validator's record, on create and edit, against the
// values.schema.json of the charts of its version.
type Checker struct {
	Renderer *Renderer
	// Resource is the Validator resource the record makes.
	Resource func(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) (*v1alpha1.Validator, error)
}

// CheckValidator fails with domain.Invalid, keyed <chart>[.<value path>],
// when the cached charts of v's imageTag refuse its values; nil when they
// accept them or are not cached (the workload controller shows that).
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
