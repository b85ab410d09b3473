package workload

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// Renderer lays out the objects a Validator's workloads are made of. The
// built-in layout and the chart renderer (Splice's published charts, in
// chart mode) are its two implementations; the controller applies, prunes,
// owns and reads the status of what either returns alike.
type Renderer interface {
	// Render is every object the controller keeps for v, in the order
	// they are applied. An error that is a *RenderError is shown on the
	// Validator as a condition (and retried with backoff); any other is
	// retried.
	Render(ctx context.Context, v *v1alpha1.Validator) (*Layout, error)
}

// Layout is what a Renderer returns for one Validator.
type Layout struct {
	// Namespace holds Objects: the Validator's own for the built-in
	// layout, one of the validator's own in chart mode.
	Namespace string
	// Objects are the desired objects, each with its namespace set.
	Objects []client.Object
	// Charts the objects were rendered from; empty for the built-in
	// layout.
	Charts []v1alpha1.ChartRef
}

// RenderError is a render failure the Validator's status shows: the
// condition's reason (such as ChartUnavailable) and a message naming
// what failed, never a secret value.
type RenderError struct {
	Reason  string
	Message string
	Err     error
}

func (e *RenderError) Error() string { return e.Message }

func (e *RenderError) Unwrap() error { return e.Err }
