package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

// printReport writes the figures as an aligned table.
func printReport(out io.Writer, cfg config, op operator, r result) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	n := float64(cfg.clusters)
	per := func(v int) string { return fmt.Sprintf("%d\t%.2f", v, float64(v)/n) }
	pct := benchutil.Percentile
	round := benchutil.Round
	fmt.Fprintf(w, "RayCluster benchmark: %d clusters x (1 head + %d workers) on %d kwok Nodes, %s %s args %q\n",
		cfg.clusters, cfg.workers, cfg.nodes, op.kind, op.bin, strings.Join(op.args, " "))
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
	cp := make([]string, 0, len(r.controlPlane))
	for _, c := range r.controlPlane {
		cp = append(cp, fmt.Sprintf("%s %.1f s", c.name, c.cpu.Seconds()))
	}
	fmt.Fprintf(w, "control plane CPU (whole run)\t%s\n", strings.Join(cp, ", "))
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
	fmt.Fprintf(w, "%s API writes (audit log)\ttotal\tper cluster\n", op.kind)
	for _, k := range r.writes.SortedKeys() {
		fmt.Fprintf(w, "  %s %s\t%s\n", k.Resource, k.Verb, per(r.writes.ByKey[k]))
	}
	fmt.Fprintf(w, "all writes\t%s\n", per(r.writes.Total))
	fmt.Fprintf(w, "  of which before all were ready\t%s\n", per(r.writes.BeforeSplit))
	fmt.Fprintf(w, "status writes\t%s\n", per(r.writes.Status))
	fmt.Fprintf(w, "409 conflicts\t%s\n", per(r.writes.Conflicts))
	fmt.Fprintf(w, "other failed writes (non-2xx)\t%s\n", per(r.writes.Failed))
	for _, k := range r.writes.SortedFailures() {
		fmt.Fprintf(w, "  failed: %s\t%d\n", k, r.writes.Failures[k])
	}
	_ = w.Flush()
}
