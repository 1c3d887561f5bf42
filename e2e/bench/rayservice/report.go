package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// printReport writes the figures as an aligned table.
func printReport(out io.Writer, cfg config, r result) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	n := float64(cfg.services)
	pct, round := benchutil.Percentile, benchutil.Round
	fmt.Fprintf(w, "RayService benchmark: %d RayServices x (1 head + %d workers) on %d kwok Nodes, dashboard deploy delay %v, spoke args %q\n",
		cfg.services, cfg.workers, cfg.nodes, cfg.deployDelay, cfg.spokeArgs)
	fmt.Fprintf(w, "time to all Ready\t%v\n", round(r.total))
	fmt.Fprintf(w, "per-RayService create->Ready p50 / p90 / p99 / max\t%v / %v / %v / %v\n",
		round(pct(r.latencies, 0.50)), round(pct(r.latencies, 0.90)),
		round(pct(r.latencies, 0.99)), round(pct(r.latencies, 1)))
	fmt.Fprintf(w, "dashboard calls until all Ready, per RayService\t%s\n", perOp(r.dashboardToReady, n, 1))
	fmt.Fprintf(w, "spoke peak RSS (VmHWM)\t%.1f MiB\n", float64(r.usage.PeakRSSBytes)/(1<<20))
	fmt.Fprintf(w, "spoke CPU (user+system, whole run)\t%.2f s\n", r.usage.CPU.Seconds())
	cp := make([]string, 0, len(r.controlPlane))
	for _, c := range r.controlPlane {
		cp = append(cp, fmt.Sprintf("%s %.1f s", c.name, c.cpu.Seconds()))
	}
	fmt.Fprintf(w, "control plane CPU (whole run)\t%s\n", strings.Join(cp, ", "))
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

	per := func(v int) string { return fmt.Sprintf("%d\t%.2f", v, float64(v)/n) }
	fmt.Fprintln(w)
	fmt.Fprintln(w, "spoke API writes, whole run (audit log)\ttotal\tper RayService")
	for _, k := range r.writes.SortedKeys() {
		fmt.Fprintf(w, "  %s %s\t%s\n", k.Resource, k.Verb, per(r.writes.ByKey[k]))
	}
	fmt.Fprintf(w, "all writes\t%s\n", per(r.writes.Total))
	fmt.Fprintf(w, "  of which before all were Ready\t%s\n", per(r.writes.BeforeSplit))
	fmt.Fprintf(w, "status writes\t%s\n", per(r.writes.Status))
	fmt.Fprintf(w, "409 conflicts\t%s\n", per(r.writes.Conflicts))
	fmt.Fprintf(w, "other failed writes (non-2xx)\t%s\n", per(r.writes.Failed))
	for _, k := range r.writes.SortedFailures() {
		fmt.Fprintf(w, "  failed: %s\t%d\n", k, r.writes.Failures[k])
	}
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
