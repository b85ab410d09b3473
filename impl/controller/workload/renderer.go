package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// Renderer lays out the objects a Validator's workloads are made of. The
// built-in layout (BuiltIn) and the chart renderer (Splice's published
// charts, in chart mode) are its two implementations; the controller
// applies, prunes, owns and reads the status of what either returns alike.
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
	// layout, ReleaseNamespace(v) in chart mode (the controller creates
	// it, labelled with the validator, and deletes it with the Validator).
	Namespace string
	// Objects are the desired objects, each with its namespace set:
	// Deployments, StatefulSets, Services and ConfigMaps (applied by
	// server-side apply, pruned when a later render no longer holds them) and
	// PersistentVolumeClaims (created once, never changed nor pruned). The
	// controller labels each with its validator (ValidatorLabel,
	// ValidatorNamespaceLabel, ManagedByLabel; the pod templates too), so
	// a Renderer need not; a Renderer labels each Deployment and
	// StatefulSet and its pod template with ComponentLabel naming its
	// component (Participant, ValidatorApp, WalletUI, ANSUI, Postgres):
	// the status is read from those. The objects are the controller's to
	// change: a Renderer returns new ones on every call.
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

// BuiltIn is the built-in layout (Desired) as a Renderer: the Validator's
// own namespace, no charts.
type BuiltIn struct{}

// Render is Desired(v) in v's namespace; it never fails.
func (BuiltIn) Render(_ context.Context, v *v1alpha1.Validator) (*Layout, error) {
	return &Layout{Namespace: v.Namespace, Objects: Desired(v)}, nil
}

// ReleaseNamespace is the namespace of v's release in chart mode:
// "<namespace>-<name>" of the Validator, cut to fit, and a digest of both
// ("-" and 12 hex digits): a DNS label of at most 63 characters, the same
// for a Validator every time, and another for every other Validator
// (namespace "a-b" and name "c" and namespace "a" and name "b-c" read
// alike, their digests differ). A namespace of that name that another
// validator's labels name is never used (the Rendered condition says so).
func ReleaseNamespace(v *v1alpha1.Validator) string {
	sum := sha256.Sum256([]byte(v.Namespace + "/" + v.Name))
	suffix := "-" + hex.EncodeToString(sum[:6])
	readable := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, v.Namespace+"-"+v.Name)
	readable = strings.Trim(readable[:min(len(readable), 63-len(suffix))], "-")
	return readable + suffix
}
