package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// Renderer lays out a Validator's objects: BuiltIn, or the chart renderer.
type Renderer interface {
	// Render is every object kept for v, in apply order. A *RenderError
	// is shown as a condition and retried with backoff.
	Render(ctx context.Context, v *v1alpha1.Validator) (*Layout, error)
}

// Layout is what a Renderer returns for one Validator.
type Layout struct {
	// Namespace holds Objects: the Validator's, or ReleaseNamespace(v).
	Namespace string
	// Objects are new on every call (the controller changes them): the
	// pruned kinds, and claims (created once). The controller labels them
	// with the validator; a Renderer labels each workload and its pod
	// template with ComponentLabel, which the status is read from.
	Objects []client.Object
	// Charts the objects were rendered from; empty for the built-in layout.
	Charts []v1alpha1.ChartRef
}

// RenderError is a render failure the Validator's status shows; the
// message never holds a secret value.
type RenderError struct {
	Reason  string
	Message string
	Err     error
}

func (e *RenderError) Error() string { return e.Message }

func (e *RenderError) Unwrap() error { return e.Err }

// BuiltIn is the built-in layout (Desired) as a Renderer.
type BuiltIn struct{}

// Render is Desired(v) in v's namespace; it never fails.
func (BuiltIn) Render(_ context.Context, v *v1alpha1.Validator) (*Layout, error) {
	return &Layout{Namespace: v.Namespace, Objects: Desired(v)}, nil
}

// ReleaseNamespace is v's namespace in chart mode: "<namespace>-<name>",
// cut to a DNS label, and a digest of both (namespace "a-b" and name "c"
// read as namespace "a" and name "b-c", but their digests differ).
func ReleaseNamespace(v *v1alpha1.Validator) string {
	sum := sha256.Sum256([]byte(v.Namespace + "/" + v.Name))
	suffix := "-" + hex.EncodeToString(sum[:6])
	// A name is a DNS subdomain: of its characters, only a dot is not a
	// namespace's.
	readable := strings.ReplaceAll(v.Namespace+"-"+v.Name, ".", "-")
	readable = strings.Trim(readable[:min(len(readable), 63-len(suffix))], "-")
	return readable + suffix
}
