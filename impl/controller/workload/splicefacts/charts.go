package splicefacts

import "fmt"

// ChartFacts is the table of what Splice's published charts read beside
// their values (the workload package's testdata/splice-chart-secrets.yaml):
// the Secrets an installer creates and the database they connect to.
type ChartFacts struct {
	Splice struct {
		Repository string `json:"repository"`
		Release    string `json:"release"`
	} `json:"splice"`
	Secrets    []ChartSecret `json:"secrets"`
	NotWritten []struct {
		Name   string `json:"name"`
		Key    string `json:"key"`
		When   string `json:"when"`
		Source string `json:"source"`
	} `json:"notWritten"`
	Database ChartDatabase `json:"database"`
}

// ChartSecret is a Secret the charts read: its keys and what each holds.
type ChartSecret struct {
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

// ChartDatabase is how the charts reach the database.
type ChartDatabase struct {
	Bootstrap struct {
		User     string `json:"user"`
		Database string `json:"database"`
		Source   string `json:"source"`
	} `json:"bootstrap"`
	InitImage   Fact     `json:"initImage"`
	Port        Fact     `json:"port"`
	Participant ChartApp `json:"participant"`
	Validator   ChartApp `json:"validator"`
}

// ChartApp is where one chart's app keeps its data.
type ChartApp struct {
	User          Fact `json:"user"`
	Database      Fact `json:"database"`
	Schema        Fact `json:"schema"`
	Host          Fact `json:"host"`
	ConflictCheck *struct {
		Prefix string `json:"prefix"`
		Source string `json:"source"`
	} `json:"conflictCheck"`
}

// Fact is one value with where it was read.
type Fact struct {
	Value  any    `json:"value"`
	Source string `json:"source"`
}

// String is the value as text.
func (f Fact) String() string { return fmt.Sprint(f.Value) }

// LoadCharts reads the chart table at path; unknown fields are errors.
func LoadCharts(path string) (ChartFacts, error) { return load[ChartFacts](path) }
