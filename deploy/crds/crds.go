// Package crds carries the CustomResourceDefinitions of this directory inside
// the binary, so that the embedded default installs them without a checkout
// of the repository.
package crds

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.yaml
var files embed.FS

// Manifest is one CRD document as the directory holds it.
type Manifest struct {
	Name string // file name, e.g. validators.validator-manager.io.yaml
	YAML []byte
}

// All returns every *.yaml of the directory, sorted by file name.
func All() []Manifest {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		panic(err) // a constant pattern is always valid
	}
	sort.Strings(names)
	out := make([]Manifest, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			panic(err) // embedded at build time
		}
		out = append(out, Manifest{Name: n, YAML: b})
	}
	return out
}
