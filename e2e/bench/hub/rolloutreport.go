package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// writeSection is one line of the write tables: whose writes, where.
type writeSection struct {
	title string
	// onHub reads the hub's audit log; otherwise the members' logs, summed.
	onHub bool
	user  string
}

// writeSections are the agents' writes the rollout report shows, in order.
var writeSections = []writeSection{
	{title: "on the hub, by bin/hub", onHub: true, user: hubUser},
	{title: "on the members (summed), by bin/hub", user: hubUser},
	{title: "on the members (summed), by bin/spoke", user: spokeUser},
}

// heartbeatResources are written on a timer whatever the RayServices do: the spoke's
// ClusterReport heartbeat and the renewal of its claim Lease, and the hub's MemberCluster
// status that mirrors the heartbeat. They are shown but left out of the rollout's totals and
// of waitQuiet.
var heartbeatResources = map[string]bool{
	"clusterreports":        true,
	"clusterreports/status": true,
	"memberclusters":        true,
	"memberclusters/status": true,
	"leases":                true,
}

// rolloutTotal counts wc's writes other than heartbeats.
func rolloutTotal(wc benchutil.WriteCounts) int {
	n := 0
	for k, v := range wc.ByKey {
		if !heartbeatResources[k.Resource] {
			n += v
		}
	}
	return n
}

// printRolloutReport writes the rollout figures: each run's time and per-cluster phases, their
// min / median / max, and the write tables of the rollouts and of the steady windows.
func printRolloutReport(out io.Writer, cfg config, r rolloutResult) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	round := benchutil.Round
	fmt.Fprintf(w, "Rollout benchmark: 1 RayService (head + 1 worker) on %d members, rollout {soakSeconds: %d, maxUnavailableClusters: 1}, "+
		"%d runs; bin/hub and bin/spoke, kwok Pods, dashboard stand-in deploy delay %v\n",
		cfg.members, cfg.rollout.soakSeconds, len(r.runs), cfg.rollout.deployDelay)
	took := make([]time.Duration, len(r.runs))
	for i, run := range r.runs {
		took[i] = run.took()
	}
	lo, med, hi := minMedianMax(took)
	fmt.Fprintf(w, "first placement: create -> Complete\t%v\n", round(r.initial))
	fmt.Fprintf(w, "spec change -> fleet Complete, min / median / max\t%v / %v / %v\n", round(lo), round(med), round(hi))
	fmt.Fprintf(w, "bin/hub CPU / peak RSS (whole benchmark)\t%.2f s / %.1f MiB\n", r.hub.CPU.Seconds(), mib(r.hub.PeakRSSBytes))
	fmt.Fprintf(w, "bin/spoke CPU summed / largest peak RSS (whole benchmark)\t%.2f s / %.1f MiB\n", r.spokes.CPU.Seconds(), mib(r.spokes.PeakRSSBytes))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "run\tspec change -> Complete\tper cluster, from the change: Updating / Soaking / Done")
	for i, run := range r.runs {
		fmt.Fprintf(w, "%d\t%v\t%s\n", i+1, round(took[i]), timeline(run.trace, run.start))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "API writes per rollout (audit logs; spec change until the agents were quiet %v after Complete)\n", cfg.settle)
	writeTable(w, r.runs, func(run rolloutRun) map[string]benchutil.WriteCounts { return run.writes })
	fmt.Fprintln(w)
	fmt.Fprintf(w, "steady state: API writes in the %v after each rollout\n", cfg.rollout.steady)
	writeTable(w, r.runs, func(run rolloutRun) map[string]benchutil.WriteCounts { return run.steady })
	_ = w.Flush()
}

// writeTable prints, per section, every resource and verb written in any run, one column per
// run and their mean; then the section's total without heartbeats, and its failures.
func writeTable(w io.Writer, runs []rolloutRun, of func(rolloutRun) map[string]benchutil.WriteCounts) {
	header := []string{"resource verb"}
	for i := range runs {
		header = append(header, fmt.Sprintf("run %d", i+1))
	}
	fmt.Fprintln(w, strings.Join(append(header, "mean"), "\t"))
	for _, s := range writeSections {
		// Trailing tabs keep the title in the table's block, so that its columns stay aligned.
		fmt.Fprintln(w, s.title+strings.Repeat("\t", len(runs)+1))
		counts := make([]benchutil.WriteCounts, len(runs))
		for i, run := range runs {
			counts[i] = of(run)[s.title]
		}
		for _, k := range unionKeys(counts) {
			name := "  " + k.Resource + " " + k.Verb
			if heartbeatResources[k.Resource] {
				name += " (heartbeat, not counted)"
			}
			row(w, name, counts, func(wc benchutil.WriteCounts) int { return wc.ByKey[k] })
		}
		row(w, "  all", counts, rolloutTotal)
		row(w, "  409 conflicts / other failures", counts, func(wc benchutil.WriteCounts) int { return wc.Conflicts + wc.Failed })
	}
}

// row prints one line of a write table: name, value per run, mean.
func row(w io.Writer, name string, counts []benchutil.WriteCounts, value func(benchutil.WriteCounts) int) {
	cells := []string{name}
	sum := 0
	for _, wc := range counts {
		v := value(wc)
		sum += v
		cells = append(cells, fmt.Sprint(v))
	}
	mean := 0.0
	if len(counts) > 0 {
		mean = float64(sum) / float64(len(counts))
	}
	fmt.Fprintln(w, strings.Join(append(cells, fmt.Sprintf("%.1f", mean)), "\t"))
}

// unionKeys returns every key written in any of counts, most writes over all first, then by
// name.
func unionKeys(counts []benchutil.WriteCounts) []benchutil.WriteKey {
	total := benchutil.WriteCounts{ByKey: map[benchutil.WriteKey]int{}}
	for _, wc := range counts {
		for k, v := range wc.ByKey {
			total.ByKey[k] += v
		}
	}
	return total.SortedKeys()
}

// shownPhases are the cluster phases a timeline shows, in order.
var shownPhases = []fleetv1alpha1.ClusterRolloutPhase{
	fleetv1alpha1.ClusterUpdating, fleetv1alpha1.ClusterSoaking, fleetv1alpha1.ClusterDone,
}

// timeline formats when each cluster was first seen Updating, Soaking and Done, relative to
// start, the clusters in the order they started updating.
func timeline(tr rolloutTrace, start time.Time) string {
	names := make([]string, 0, len(tr.first))
	for name := range tr.first {
		names = append(names, name)
	}
	began := func(name string) time.Time {
		for _, p := range shownPhases {
			if t, ok := tr.first[name][p]; ok {
				return t
			}
		}
		return time.Time{}
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := began(a).Compare(began(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, name := range names {
		var at []string
		for _, p := range shownPhases {
			if t, ok := tr.first[name][p]; ok {
				at = append(at, fmt.Sprintf("%.1fs", t.Sub(start).Seconds()))
			} else {
				at = append(at, "-")
			}
		}
		parts[i] = name + " " + strings.Join(at, " / ")
	}
	return strings.Join(parts, ", ")
}

// minMedianMax returns the smallest, median (mean of the middle two for an even count) and
// largest of d, or zeros for none.
func minMedianMax(d []time.Duration) (lo, med, hi time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return s[0], med, s[n-1]
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
