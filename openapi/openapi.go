// Package openapi embeds the two hand-written API contracts. The server
// validates requests against them and publishes them as written: the copies
// that oapi-codegen embeds in gen/ have their operationIds capitalised.
package openapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

//go:embed management-1.11.yaml
var managementYAML []byte

//go:embed platform-2.0.yaml
var platformYAML []byte

func init() {
	// kin-openapi checks date-time and byte by itself; uri needs a validator.
	openapi3.DefineStringFormatValidator("uri", openapi3.NewCallbackValidator(func(s string) error {
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return errors.New("must be an absolute URI")
		}
		return nil
	}))
}

// Management loads release 1.11's contract (a fresh copy on every call).
func Management() (*openapi3.T, error) { return load("management-1.11.yaml", managementYAML) }

// Platform loads release 2.0's contract (a fresh copy on every call).
func Platform() (*openapi3.T, error) { return load("platform-2.0.yaml", platformYAML) }

func load(name string, raw []byte) (*openapi3.T, error) {
	// kin-openapi reads JSON several times faster than YAML (it converts
	// YAML through a generic tree itself); TestJSONLoadsTheSame holds the
	// two readings equal.
	var tree any
	if err := yaml.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	js, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(js)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return doc, nil
}
