// Package adminapi holds the Go code generated from openapi/proto/ (the subset of Canton's
// participant admin gRPC API validator-manager calls) by protoc with the protoc-gen-go and
// protoc-gen-go-grpc versions pinned in go.mod (tools.go); never edit the .pb.go files.
// Each Canton protobuf package is a Go package below this one.
package adminapi

//go:generate sh ./protoc.sh
