// Package ledgerapi is generated from openapi/upstream/ledger-api.yaml (the JSON Ledger API v2 operations validator-manager calls) by oapi-codegen; never edit the .gen.go files.
package ledgerapi

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config types.cfg.yaml ../../../openapi/upstream/ledger-api.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config client.cfg.yaml ../../../openapi/upstream/ledger-api.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config spec.cfg.yaml ../../../openapi/upstream/ledger-api.yaml
