package workload_test

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// chartFacts is the table of what Splice's published charts read beside
// their values (testdata/splice-chart-secrets.yaml): the Secrets an
// installer creates and the database they connect to.
type chartFacts struct {
	Splice struct {
		Repository string `json:"repository"`
		Release    string `json:"release"`
	} `json:"splice"`
	Secrets    []chartSecretFact `json:"secrets"`
	NotWritten []struct {
		Name   string `json:"name"`
		Key    string `json:"key"`
		When   string `json:"when"`
		Source string `json:"source"`
	} `json:"notWritten"`
	Database struct {
		Bootstrap struct {
			User     string `json:"user"`
			Database string `json:"database"`
			Source   string `json:"source"`
		} `json:"bootstrap"`
		InitImage   fact         `json:"initImage"`
		Port        fact         `json:"port"`
		Participant chartAppFact `json:"participant"`
		Validator   chartAppFact `json:"validator"`
	} `json:"database"`
}

// chartSecretFact is a Secret the charts read: its keys and what each holds.
type chartSecretFact struct {
	Name    string   `json:"name"`
	NamedBy string   `json:"namedBy"`
	ReadBy  []string `json:"readBy"`
	// When: the Secret is read only then ("onboarding", "wallet"); empty:
	// always.
	When string `json:"when"`
	Keys []struct {
		Key string `json:"key"`
		// Holds names the value the key carries (see the table's header).
		Holds    string `json:"holds"`
		Optional bool   `json:"optional"`
		Source   string `json:"source"`
	} `json:"keys"`
}

// chartAppFact is where one chart's app keeps its data.
type chartAppFact struct {
	User          fact `json:"user"`
	Database      fact `json:"database"`
	Schema        fact `json:"schema"`
	Host          fact `json:"host"`
	ConflictCheck *struct {
		Prefix string `json:"prefix"`
		Source string `json:"source"`
	} `json:"conflictCheck"`
}

// fact is one value with where it was read.
type fact struct {
	Value  any    `json:"value"`
	Source string `json:"source"`
}

func (f fact) String() string { return fmt.Sprint(f.Value) }

// loadChartFacts reads the table; unknown fields are errors.
func loadChartFacts(t *testing.T) chartFacts {
	t.Helper()
	raw, err := os.ReadFile("testdata/splice-chart-secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f chartFacts
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		t.Fatalf("testdata/splice-chart-secrets.yaml: %v", err)
	}
	if f.Splice.Release != "0.7.3" || len(f.Secrets) != 5 {
		t.Fatalf("chart facts of release %q name %d Secrets, want 0.7.3 and 5", f.Splice.Release, len(f.Secrets))
	}
	return f
}
