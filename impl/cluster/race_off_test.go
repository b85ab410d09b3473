//go:build !race

package cluster_test

// raceBuild: see race_on_test.go.
const raceBuild = false
