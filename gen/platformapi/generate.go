// Package platformapi is generated from openapi/platform-2.0.yaml by oapi-codegen; never edit the .gen.go files.
package platformapi

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config types.cfg.yaml ../../openapi/platform-2.0.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config server.cfg.yaml ../../openapi/platform-2.0.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config client.cfg.yaml ../../openapi/platform-2.0.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config spec.cfg.yaml ../../openapi/platform-2.0.yaml
