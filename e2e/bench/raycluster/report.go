package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/internal/spokebench"
)

// printReport writes the figures as an aligned table.
func printReport(out io.Writer, cfg config, op operator, r result) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	n := float64(cfg.Count)
	pct := benchutil.Percentile
	round := benchutil.Round
	fmt.Fprintf(w, "RayCluster benchmark: %d clusters x (1 head + %d workers) on %d kwok Nodes, %s %s args %q\n",
		cfg.Count, cfg.Workers, cfg.Nodes, op.kind, op.bin, strings.Join(op.args, " "))
	fmt.Fprintf(w, "time to all ready\t%v\n", r.total.Round(time.Millisecond))
	fmt.Fprintf(w, "per-cluster create->ready p50 / p90 / p99 / max\t%v / %v / %v / %v\n",
		round(pct(r.latencies, 0.50)), round(pct(r.latencies, 0.90)),
		round(pct(r.latencies, 0.99)), round(pct(r.latencies, 1)))
	for st, d := range r.stages {
		fmt.Fprintf(w, "  create->%s p50 / p99\t%v / %v\n", stageNames[st], round(pct(d, 0.50)), round(pct(d, 0.99)))
	}
	fmt.Fprintf(w, "head Pod ready->HeadPodReady in status p50 / p99 / max\t%v / %v / %v\n",
		round(pct(r.headLags, 0.50)), round(pct(r.headLags, 0.99)), round(pct(r.headLags, 1)))
	fmt.Fprintf(w, "%s peak RSS (VmHWM)\t%.1f MiB\n", op.kind, float64(r.usage.PeakRSSBytes)/(1<<20))
	fmt.Fprintf(w, "%s CPU (user+system)\t%.2f s\n", op.kind, r.usage.CPU.Seconds())
	spokebench.PrintControlPlaneCPU(w, r.controlPlane)
	if len(r.requests) > 0 {
		parts := make([]string, 0, len(r.requests))
		for _, q := range r.requests {
			parts = append(parts, fmt.Sprintf("%s %s %.0f", q.Verb, q.Resource, q.N))
		}
		fmt.Fprintf(w, "API server requests (all clients)\t%.0f; busiest: %s\n", r.requestsTotal, strings.Join(parts, ", "))
	}
	if len(r.reconcile) > 0 {
		fmt.Fprintf(w, "raycluster reconciles by result\t%s\n", benchutil.FormatTotals(r.reconcile, n, "cluster"))
	}
	fmt.Fprintln(w)
	spokebench.PrintWrites(w, op.kind+" API writes (audit log)\ttotal\tper cluster", r.writes, n, "ready")
	_ = w.Flush()
}
