package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

// printReport writes the figures as an aligned table, each target next to its figure.
func printReport(out io.Writer, cfg config, r result) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	n := float64(cfg.services)
	pct, round := benchutil.Percentile, benchutil.Round
	fmt.Fprintf(w, "Hub benchmark: %d RayServices on %d members (clusters: 1), status changes every %v, hub args %q\n",
		cfg.services, cfg.members, cfg.statusInterval, strings.Join(cfg.hubArgs, " "))
	fmt.Fprintf(w, "time until all member copies exist\t%v\t%s\n", round(r.placedIn), verdict(r.placedIn <= targetPlaced, "<= 60s"))
	fmt.Fprintf(w, "per-RayService create->copy p50 / p90 / p99 / max\t%s\n", quantiles(r.placeLat))
	fmt.Fprintf(w, "copies per member\t%s\n", perMember(r.perMember))
	p99 := pct(r.statusLat, 0.99)
	fmt.Fprintf(w, "member status change->hub Ready p50 / p90 / p99 / max\t%s\t%s\n",
		quantiles(r.statusLat), verdict(p99 <= targetStatusP99, "p99 <= 1s"))
	fmt.Fprintf(w, "  over %d changes, all shown on the hub in\t%v\n", len(r.statusLat), round(r.statusIn))
	fmt.Fprintf(w, "hub peak RSS (VmHWM, whole run)\t%.1f MiB\t%s\n", float64(r.usage.PeakRSSBytes)/(1<<20),
		verdict(r.usage.PeakRSSBytes <= targetRSSBytes, "<= 300 MB"))
	fmt.Fprintf(w, "hub CPU until all placed / whole run\t%.2f s / %.2f s\n", r.usagePlaced.CPU.Seconds(), r.usage.CPU.Seconds())

	per := func(v int) string { return fmt.Sprintf("%d\t%.2f", v, float64(v)/n) }
	for _, where := range []string{"hub", "member"} {
		wc := r.writes[where]
		fmt.Fprintln(w)
		fmt.Fprintf(w, "hub's API writes to the %s (audit log)\ttotal\tper RayService\n", label(where))
		for _, k := range wc.SortedKeys() {
			fmt.Fprintf(w, "  %s %s\t%s\n", k.Resource, k.Verb, per(wc.ByKey[k]))
		}
		fmt.Fprintf(w, "all writes\t%s\n", per(wc.Total))
		fmt.Fprintf(w, "  of which until all copies existed\t%s\n", per(wc.BeforeSplit))
		fmt.Fprintf(w, "409 conflicts / other failures\t%d / %d\n", wc.Conflicts, wc.Failed)
		for _, k := range wc.SortedFailures() {
			fmt.Fprintf(w, "  failed: %s\t%d\n", k, wc.Failures[k])
		}
	}
	total := r.writes["hub"].Total + r.writes["member"].Total
	fmt.Fprintf(w, "\nAPI writes per placement (hub + members, whole run)\t%.2f\n", float64(total)/n)
	_ = w.Flush()
}

func label(where string) string {
	if where == "hub" {
		return "hub"
	}
	return "members (summed)"
}

// quantiles formats p50 / p90 / p99 / max of sorted durations.
func quantiles(sorted []time.Duration) string {
	pct, round := benchutil.Percentile, benchutil.Round
	return fmt.Sprintf("%v / %v / %v / %v", round(pct(sorted, 0.5)), round(pct(sorted, 0.9)),
		round(pct(sorted, 0.99)), round(pct(sorted, 1)))
}

// verdict prints a target and whether the figure meets it.
func verdict(ok bool, target string) string {
	if ok {
		return "target " + target + ": met"
	}
	return "target " + target + ": MISSED"
}

// perMember formats the copy counts in member order.
func perMember(m map[string]int) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
