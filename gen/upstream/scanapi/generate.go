// Package scanapi is generated from openapi/upstream/scan.yaml by oapi-codegen; never edit the .gen.go files.
package scanapi

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config types.cfg.yaml ../../../openapi/upstream/scan.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config client.cfg.yaml ../../../openapi/upstream/scan.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config spec.cfg.yaml ../../../openapi/upstream/scan.yaml
