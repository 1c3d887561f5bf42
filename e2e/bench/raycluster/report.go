package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// printReport writes the figures as an aligned table.
func printReport(out io.Writer, cfg config, r result) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	n := float64(cfg.clusters)
	per := func(v int) string { return fmt.Sprintf("%d\t%.2f", v, float64(v)/n) }
	fmt.Fprintf(w, "RayCluster benchmark: %d clusters x (1 head + %d workers) on %d kwok Nodes, spoke args %q\n",
		cfg.clusters, cfg.workers, cfg.nodes, cfg.spokeArgs)
	fmt.Fprintf(w, "time to all ready\t%v\n", r.total.Round(time.Millisecond))
	fmt.Fprintf(w, "per-cluster create->ready p50 / p90 / p99 / max\t%v / %v / %v / %v\n",
		round(percentile(r.latencies, 0.50)), round(percentile(r.latencies, 0.90)),
		round(percentile(r.latencies, 0.99)), round(percentile(r.latencies, 1)))
	for st, d := range r.stages {
		fmt.Fprintf(w, "  create->%s p50 / p99\t%v / %v\n", stageNames[st], round(percentile(d, 0.50)), round(percentile(d, 0.99)))
	}
	fmt.Fprintf(w, "spoke peak RSS (VmHWM)\t%.1f MiB\n", float64(r.usage.PeakRSSBytes)/(1<<20))
	fmt.Fprintf(w, "spoke CPU (user+system)\t%.2f s\n", r.usage.CPU.Seconds())
	cp := make([]string, 0, len(r.controlPlane))
	for _, c := range r.controlPlane {
		cp = append(cp, fmt.Sprintf("%s %.1f s", c.name, c.cpu.Seconds()))
	}
	fmt.Fprintf(w, "control plane CPU (whole run)\t%s\n", strings.Join(cp, ", "))
	if len(r.requests) > 0 {
		parts := make([]string, 0, len(r.requests))
		for _, q := range r.requests {
			parts = append(parts, fmt.Sprintf("%s %s %.0f", q.verb, q.resource, q.n))
		}
		fmt.Fprintf(w, "API server requests (all clients)\t%.0f; busiest: %s\n", r.requestsTotal, strings.Join(parts, ", "))
	}
	if len(r.reconcile) > 0 {
		fmt.Fprintf(w, "raycluster reconciles by result\t%s\n", formatTotals(r.reconcile, n))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "spoke API writes (audit log)\ttotal\tper cluster")
	for _, k := range r.writes.sortedKeys() {
		fmt.Fprintf(w, "  %s %s\t%s\n", k.Resource, k.Verb, per(r.writes.ByKey[k]))
	}
	fmt.Fprintf(w, "all writes\t%s\n", per(r.writes.Total))
	fmt.Fprintf(w, "  of which before all were ready\t%s\n", per(r.writes.BeforeReady))
	fmt.Fprintf(w, "status writes\t%s\n", per(r.writes.Status))
	fmt.Fprintf(w, "409 conflicts\t%s\n", per(r.writes.Conflicts))
	fmt.Fprintf(w, "other failed writes (non-2xx)\t%s\n", per(r.writes.Failed))
	failures := make([]string, 0, len(r.writes.Failures))
	for k := range r.writes.Failures {
		failures = append(failures, k)
	}
	sort.Strings(failures)
	for _, k := range failures {
		fmt.Fprintf(w, "  failed: %s\t%d\n", k, r.writes.Failures[k])
	}
	_ = w.Flush()
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func formatTotals(m map[string]float64, n float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.0f (%.2f/cluster)", k, m[k], m[k]/n))
	}
	return strings.Join(parts, ", ")
}

// reconcileTotals scrapes controller_runtime_reconcile_total for the raycluster controller from
// the spoke's metrics endpoint, by result (success, error, requeue, requeue_after).
func reconcileTotals(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	totals := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "controller_runtime_reconcile_total{") || !strings.Contains(line, `controller="raycluster"`) {
			continue
		}
		labelsPart, value, ok := strings.Cut(line[len("controller_runtime_reconcile_total{"):], "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		for l := range strings.SplitSeq(labelsPart, ",") {
			if res, ok := strings.CutPrefix(l, `result="`); ok {
				totals[strings.TrimSuffix(res, `"`)] += v
			}
		}
	}
	return totals, sc.Err()
}
