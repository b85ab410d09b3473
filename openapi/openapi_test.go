package openapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestJSONLoadsTheSame: the contracts read through JSON (as load does) are
// the documents kin-openapi reads from the YAML as written.
func TestJSONLoadsTheSame(t *testing.T) {
	for name, raw := range map[string][]byte{"management": managementYAML, "platform": platformYAML} {
		viaJSON, err := load(name, raw)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := openapi3.NewLoader().LoadFromData(raw)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(viaJSON)
		b, _ := json.Marshal(direct)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: the document read through JSON differs from the YAML's", name)
		}
	}
}
