// Package managementapi is generated from openapi/management-1.11.yaml by oapi-codegen; never edit the .gen.go files.
package managementapi

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config types.cfg.yaml ../../openapi/management-1.11.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config server.cfg.yaml ../../openapi/management-1.11.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config client.cfg.yaml ../../openapi/management-1.11.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config spec.cfg.yaml ../../openapi/management-1.11.yaml
