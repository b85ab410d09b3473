// Package splicefacts reads the table of what Splice's charts and images
// require of a validator's workloads (the workload package's
// testdata/splice-requirements.yaml), for the tests that check the desired
// objects and the live ones against it.
package splicefacts

import (
	"fmt"
	"os"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Facts is the table (testdata/splice-requirements.yaml of package workload).
type Facts struct {
	Splice struct {
		Repository string `json:"repository"`
		Commit     string `json:"commit"`
	} `json:"splice"`
	Images []Image `json:"images"`
}

// Image is what Splice requires of one image.
type Image struct {
	Image    string `json:"image"`
	Workload string `json:"workload"`
	User     struct {
		RunAsUser *int64 `json:"runAsUser"`
		ImageUser bool   `json:"imageUser"`
		Source    string `json:"source"`
	} `json:"user"`
	Ports []struct {
		Name   string `json:"name"`
		Port   int32  `json:"port"`
		Source string `json:"source"`
	} `json:"ports"`
	Probes *struct {
		Liveness  Probe  `json:"liveness"`
		Readiness *Probe `json:"readiness"`
		Source    string `json:"source"`
	} `json:"probes"`
	Required []struct {
		Env        string `json:"env"`
		MayBeEmpty bool   `json:"mayBeEmpty"`
		Source     string `json:"source"`
	} `json:"required"`
	Database *Database `json:"database"`
	Mounts   []struct {
		Path          string   `json:"path"`
		Claim         bool     `json:"claim"`
		ClaimTemplate bool     `json:"claimTemplate"`
		Holds         []string `json:"holds"`
		Source        string   `json:"source"`
	} `json:"mounts"`
}

// Database: where an image reads each database setting, the image's
// fallbacks, and the database and schema the charts give it.
type Database struct {
	Defaults struct {
		User     string `json:"user"`
		Database string `json:"database"`
		Password string `json:"password"`
		Source   string `json:"source"`
	} `json:"defaults"`
	Host       Setting `json:"host"`
	Port       Setting `json:"port"`
	User       Setting `json:"user"`
	Database   Setting `json:"database"`
	Schema     Setting `json:"schema"`
	Password   Setting `json:"password"`
	Name       string  `json:"name"`
	SchemaName string  `json:"schemaName"`
	Source     string  `json:"source"`
}

// Probe is a probe the charts give an image.
type Probe struct {
	GRPC     int32  `json:"grpc"`
	Service  string `json:"service"`
	HTTPPath string `json:"httpPath"`
	Port     int32  `json:"port"`
	Exec     string `json:"exec"`
}

// Setting is where a database setting is: a variable, or a key of the
// HOCON a variable holds.
type Setting struct {
	Env string `json:"env"`
	Key string `json:"key"`
}

// Load reads the table at path; unknown fields are errors.
func Load(path string) (Facts, error) {
	var f Facts
	raw, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Resolve is a variable's value in c, or secret:<name>/<key> when a Secret
// key gives it; ok is false when c does not set it.
func Resolve(c corev1.Container, name string) (value string, ok bool) {
	for _, e := range c.Env {
		switch {
		case e.Name != name:
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			return "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key, true
		default:
			return e.Value, true
		}
	}
	return "", false
}

// In is the setting's value in c (as Resolve gives it), read from the
// HOCON the variable holds when the setting is a key of it.
func (s Setting) In(c corev1.Container) string {
	val, _ := Resolve(c, s.Env)
	if s.Key == "" {
		return val
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(s.Key) + `\s*=\s*"?([^"\n]*)"?\s*$`).FindStringSubmatch(val)
	if m == nil {
		return ""
	}
	return m[1]
}
