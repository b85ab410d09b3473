// Package validatorapi is generated from openapi/upstream/validator-app.yaml by oapi-codegen; never edit the .gen.go files.
package validatorapi

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config types.cfg.yaml ../../../openapi/upstream/validator-app.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config client.cfg.yaml ../../../openapi/upstream/validator-app.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config spec.cfg.yaml ../../../openapi/upstream/validator-app.yaml
