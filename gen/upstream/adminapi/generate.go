// Package adminapi holds the Go code generated from openapi/proto/ (the subset of Canton's
// participant admin gRPC API validator-manager calls); never edit the .pb.go files.
// Each Canton protobuf package is a Go package below this one.
//
// buf compiles the .proto files (it carries the well-known types, so no protoc or
// libprotobuf-dev) and runs protoc-gen-go and protoc-gen-go-grpc at the versions go.mod pins
// (tools.go; buf.gen.yaml). buf is pinned here, not in go.mod: as a tool of this module its
// dependencies would raise google.golang.org/protobuf and others for the server too.
package adminapi

// Deleting first drops the code of a .proto file that was removed.
//go:generate find . -name *.pb.go -delete
//go:generate go run github.com/bufbuild/buf/cmd/buf@v1.75.0 generate ../../../openapi/proto --template buf.gen.yaml
