package spokebench

import (
	"fmt"
	"io"
	"strings"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

// PrintControlPlaneCPU writes the control plane's CPU line of a report.
func PrintControlPlaneCPU(w io.Writer, cp []ComponentCPU) {
	parts := make([]string, 0, len(cp))
	for _, c := range cp {
		parts = append(parts, fmt.Sprintf("%s %.1f s", c.Name, c.CPU.Seconds()))
	}
	fmt.Fprintf(w, "control plane CPU (whole run)\t%s\n", strings.Join(parts, ", "))
}

// PrintWrites writes the table of the operator's API writes of the whole run: header, then
// each resource and verb and the totals, each as a count and per object of n. ready is how the
// report words readiness ("ready", "Ready").
func PrintWrites(w io.Writer, header string, writes benchutil.WriteCounts, n float64, ready string) {
	per := func(v int) string { return fmt.Sprintf("%d\t%.2f", v, float64(v)/n) }
	fmt.Fprintln(w, header)
	for _, k := range writes.SortedKeys() {
		fmt.Fprintf(w, "  %s %s\t%s\n", k.Resource, k.Verb, per(writes.ByKey[k]))
	}
	fmt.Fprintf(w, "all writes\t%s\n", per(writes.Total))
	fmt.Fprintf(w, "  of which before all were %s\t%s\n", ready, per(writes.BeforeSplit))
	fmt.Fprintf(w, "status writes\t%s\n", per(writes.Status))
	fmt.Fprintf(w, "409 conflicts\t%s\n", per(writes.Conflicts))
	fmt.Fprintf(w, "other failed writes (non-2xx)\t%s\n", per(writes.Failed))
	for _, k := range writes.SortedFailures() {
		fmt.Fprintf(w, "  failed: %s\t%d\n", k, writes.Failures[k])
	}
}
