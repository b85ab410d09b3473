package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoFaultPointsInProduction: the binary built as released (no build
// tag) carries no fault-point code: no symbol of package faultpoint and
// none of the fault points' names. The same binary built with
// -tags faultpoints carries both, so the check sees them where they are.
func TestNoFaultPointsInProduction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary twice")
	}
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		tags string
		want bool
	}{{"", false}, {"faultpoints", true}} {
		bin := filepath.Join(dir, "validator-manager"+tc.tags)
		goCommand(t, "build", "-tags", tc.tags, "-o", bin, ".")
		symbols := faultSymbols(goCommand(t, "tool", "nm", bin))
		raw, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range crashCases {
			if bytes.Contains(raw, []byte(c.point)) {
				names = append(names, c.point)
			}
		}
		if tc.want && (len(symbols) == 0 || len(names) == 0) {
			t.Errorf("tags %q: fault-point symbols %v, names %v; want both found", tc.tags, symbols, names)
		}
		if !tc.want && (len(symbols) > 0 || len(names) > 0) {
			t.Errorf("production binary: fault-point symbols %v, names %v; want none", symbols, names)
		}
	}
}

// faultSymbols are the symbols of package faultpoint in go tool nm's output.
func faultSymbols(nm string) []string {
	var out []string
	for _, line := range strings.Split(nm, "\n") {
		if strings.Contains(line, "/impl/faultpoint.") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}
