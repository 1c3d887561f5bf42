package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/internal/spokebench"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// printReport writes the figures as an aligned table.
func printReport(out io.Writer, cfg config, r result) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	n := float64(cfg.Count)
	pct, round := benchutil.Percentile, benchutil.Round
	fmt.Fprintf(w, "RayService benchmark: %d RayServices x (1 head + %d workers) on %d kwok Nodes, dashboard deploy delay %v, spoke args %q\n",
		cfg.Count, cfg.Workers, cfg.Nodes, cfg.deployDelay, cfg.SpokeArgs)
	fmt.Fprintf(w, "time to all Ready\t%v\n", round(r.total))
	fmt.Fprintf(w, "per-RayService create->Ready p50 / p90 / p99 / max\t%v / %v / %v / %v\n",
		round(pct(r.latencies, 0.50)), round(pct(r.latencies, 0.90)),
		round(pct(r.latencies, 0.99)), round(pct(r.latencies, 1)))
	fmt.Fprintf(w, "dashboard calls until all Ready, per RayService\t%s\n", perOp(r.dashboardToReady, n, 1))
	fmt.Fprintf(w, "spoke peak RSS (VmHWM)\t%.1f MiB\n", float64(r.usage.PeakRSSBytes)/(1<<20))
	fmt.Fprintf(w, "spoke CPU (user+system, whole run)\t%.2f s\n", r.usage.CPU.Seconds())
	spokebench.PrintControlPlaneCPU(w, r.controlPlane)
	for _, c := range []string{"rayservice", "raycluster"} {
		if len(r.reconcile[c]) > 0 {
			fmt.Fprintf(w, "%s reconciles by result (whole run)\t%s\n", c, benchutil.FormatTotals(r.reconcile[c], n, "service"))
		}
	}

	s := r.steady
	minutes := s.window.Minutes()
	reconciles := benchutil.Sum(s.reconciles)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "steady state, all Ready and nothing changing\t%v\n", round(s.window))
	fmt.Fprintf(w, "  dashboard calls per RayService per minute\t%s\n", perOp(s.dashboard, n, minutes))
	if s.busiest != "" {
		fmt.Fprintf(w, "  the busiest RayService's calls per minute (%s)\t%s\n", s.busiest, perOp(s.busiestCalls, 1, minutes))
	}
	fmt.Fprintf(w, "  rayservice reconciles\t%.0f (%.1f per RayService per minute)\n", reconciles, reconciles/n/minutes)
	perReconcile := 0.0
	if reconciles > 0 {
		perReconcile = float64(s.writes.Total) / reconciles
	}
	fmt.Fprintf(w, "  spoke API writes\t%d (%.3f per reconcile)\n", s.writes.Total, perReconcile)
	for _, k := range s.writes.SortedKeys() {
		fmt.Fprintf(w, "    %s %s\t%d\n", k.Resource, k.Verb, s.writes.ByKey[k])
	}
	fmt.Fprintf(w, "  spoke CPU\t%.2f s (%.1f%% of one core)\n", s.cpu.Seconds(), 100*s.cpu.Seconds()/s.window.Seconds())

	fmt.Fprintln(w)
	spokebench.PrintWrites(w, "spoke API writes, whole run (audit log)\ttotal\tper RayService", r.writes, n, "Ready")
	_ = w.Flush()
}

// perOp formats dashboard call counts by operation, divided by n objects and minutes.
func perOp(counts map[string]int, n, minutes float64) string {
	parts := make([]string, 0, len(dashboardOps))
	for _, op := range dashboardOps {
		v := float64(counts[op]) / n / minutes
		label := op
		if op == raydashboard.OpUpdateDeployments {
			label = "update_deployments (PUT)"
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", label, v))
	}
	return strings.Join(parts, ", ")
}
