package workload

import "github.com/validator-manager/validator-manager/impl/apis/v1alpha1"

// ReleaseNamespace is the namespace of v's release in chart mode: Splice's
// charts name their objects alike whatever the release is called, so each
// validator gets a namespace of its own.
//
// The chartmode branch owns this function; this copy (same signature and
// result) lets the chart Secrets and the chart database be written before
// that branch is merged.
func ReleaseNamespace(v *v1alpha1.Validator) string { return v.Namespace + "-" + v.Name }
