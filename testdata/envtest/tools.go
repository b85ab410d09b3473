//go:build tools

// Package tools pins kube-apiserver and kube-controller-manager for
// `go build k8s.io/kubernetes/cmd/...`.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
