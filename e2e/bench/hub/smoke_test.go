//go:build e2e

package main

import (
	"flag"
	"testing"
)

// TestScaleRunSmoke runs the scale benchmark (-sim) at a size that takes a minute, so that
// `make e2e` finds a benchmark the product has left behind (a run that never places anything
// waits for its copies until -timeout and fails) rather than the next person to measure.
func TestScaleRunSmoke(t *testing.T) {
	cfg, err := parseArgs(flag.NewFlagSet("bench", flag.ContinueOnError),
		[]string{"-sim", "-members=5", "-services=20", "-parallel=10", "-steady=2s", "-timeout=4m", "-settle=1s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := runSim(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
}
