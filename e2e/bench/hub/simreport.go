package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

// Targets of the scale benchmark (issue 16), printed next to the figures.
const (
	simTargetPlaced = 60 * time.Second
	// simTargetRSSBytes is the "500 MB": 477 MiB.
	simTargetRSSBytes     = 500_000_000
	simTargetStatusP99    = time.Second
	simTargetWritesChange = 1.0
)

// steadyWork are the resources of which the steady state should see no write at all.
var steadyWork = []string{
	"rayservices", "rayservices/status", "rayservicebindings", "rayservicebindings/status", "controllerrevisions",
}

// figure is one row of a report: a figure of every run (of type R), and its target. A value
// that is NaN was not measured in that run.
type figure[R any] struct {
	name   string
	value  func(r *R) float64
	format string
	// target describes the target; ok tells whether a value meets it (nil: no target).
	target string
	ok     func(v float64) bool
}

// simFigure is one row of a scale run's report.
type simFigure = figure[simRun]

// calls sums the hub's calls in phase on the hub and the member whose resource is in
// resources (nil: all) and whose verb passes keep (nil: all).
func (r *simRun) calls(phase int, resources []string, keep func(verb string) bool) float64 {
	n := 0
	for _, wc := range r.api[phase] {
		for k, v := range wc.ByKey {
			if (resources == nil || slices.Contains(resources, k.Resource)) && (keep == nil || keep(k.Verb)) {
				n += v
			}
		}
	}
	return float64(n)
}

// seconds is the length of phase's window.
func (r *simRun) seconds(phase int) float64 {
	return r.windows[phase].To.Sub(r.windows[phase].From).Seconds()
}

// cpu is the hub's CPU time in phase.
func (r *simRun) cpu(phase int) float64 {
	return (r.usage[phase].CPU - r.usageFrom[phase].CPU).Seconds()
}

func isRead(verb string) bool { return !benchutil.IsWrite(verb) }

// simFigures are the report's rows.
func simFigures(cfg config) []simFigure {
	n := float64(cfg.services)
	members := float64(cfg.members)
	intervals := func(r *simRun) float64 { return r.seconds(phaseSteady) / cfg.reportInterval.Seconds() }
	pct := func(d []time.Duration, q float64) float64 { return benchutil.Percentile(d, q).Seconds() }
	return append([]simFigure{
		{name: "first create -> last member copy (s)", format: "%.1f", target: "< 60 s",
			value: func(r *simRun) float64 { return r.placedIn.Seconds() },
			ok:    func(v float64) bool { return v < simTargetPlaced.Seconds() }},
		{name: "  of which the harness sending the creates (s)", format: "%.1f",
			value: func(r *simRun) float64 { return r.createdIn.Seconds() }},
		{name: "  per RayService, create -> all copies p50 (s)", format: "%.2f",
			value: func(r *simRun) float64 { return pct(r.placeLat, 0.5) }},
		{name: "  per RayService, create -> all copies p99 (s)", format: "%.2f",
			value: func(r *simRun) float64 { return pct(r.placeLat, 0.99) }},
		{name: "member copies", format: "%.0f", value: func(r *simRun) float64 { return float64(r.copies) }},
		{name: "  copies on the emptiest member", format: "%.0f",
			value: func(r *simRun) float64 { return float64(r.fewest) }},
		{name: "  copies on the fullest member", format: "%.0f", value: func(r *simRun) float64 { return float64(r.most) }},
		{name: "hub peak RSS (MiB)", format: "%.0f", target: "< 500 MB (477 MiB)",
			value: func(r *simRun) float64 { return float64(r.usage[phaseSteady].PeakRSSBytes) / (1 << 20) },
			ok:    func(v float64) bool { return v < simTargetRSSBytes/(1<<20) }},
		{name: "hub CPU: placement / status / steady (s)", format: "%.1f", value: func(r *simRun) float64 { return r.cpu(phasePlace) }},
		{name: "  status phase (s)", format: "%.1f", value: func(r *simRun) float64 { return r.cpu(phaseStatus) }},
		{name: "  steady state (s)", format: "%.1f", value: func(r *simRun) float64 { return r.cpu(phaseSteady) }},
		{name: "hub queue: mean wait in placement / status / steady (s)", format: "%.2f",
			value: func(r *simRun) float64 { return r.queueWait[phasePlace] }},
		{name: "  status phase (s)", format: "%.2f", value: func(r *simRun) float64 { return r.queueWait[phaseStatus] }},
		{name: "  steady state (s)", format: "%.2f", value: func(r *simRun) float64 { return r.queueWait[phaseSteady] }},
		{name: "hub queue: depth at the end of the steady state", format: "%.0f",
			value: func(r *simRun) float64 { return r.queueDepth[phaseSteady] }},
		{name: "placement: reconciles per RayService", format: "%.2f",
			value: func(r *simRun) float64 { return r.reconciles[phasePlace] / n }},
		{name: "placement: API calls per RayService (hub+member)", format: "%.2f",
			value: func(r *simRun) float64 { return r.calls(phasePlace, rayServiceResources, nil) / n }},
		{name: "  writes per RayService", format: "%.2f",
			value: func(r *simRun) float64 { return r.calls(phasePlace, rayServiceResources, benchutil.IsWrite) / n }},
		{name: "  reads per RayService", format: "%.2f",
			value: func(r *simRun) float64 { return r.calls(phasePlace, rayServiceResources, isRead) / n }},
		{name: "status change -> hub p50 (ms)", format: "%.0f",
			value: func(r *simRun) float64 { return 1000 * pct(r.statusLat, 0.5) }},
		{name: "status change -> hub p99 (ms)", format: "%.0f", target: "< 1000 ms",
			value: func(r *simRun) float64 { return 1000 * pct(r.statusLat, 0.99) },
			ok:    func(v float64) bool { return v < float64(simTargetStatusP99.Milliseconds()) }},
		{name: "  changes sent per second", format: "%.0f",
			value: func(r *simRun) float64 { return float64(r.changes) / r.sentIn.Seconds() }},
		{name: "  hub writes per change (hub+member)", format: "%.2f", target: "about 1",
			value: func(r *simRun) float64 {
				return r.calls(phaseStatus, rayServiceResources, benchutil.IsWrite) / float64(max(r.changes, 1))
			},
			ok: func(v float64) bool { return v <= simTargetWritesChange+0.25 }},
		{name: "  reconciles per change", format: "%.2f",
			value: func(r *simRun) float64 { return r.reconciles[phaseStatus] / float64(max(r.changes, 1)) }},
		{name: "steady: writes to RayServices, bindings, revisions", format: "%.0f", target: "0",
			value: func(r *simRun) float64 { return r.calls(phaseSteady, steadyWork, benchutil.IsWrite) },
			ok:    func(v float64) bool { return v == 0 }},
		{name: "steady: MemberCluster writes per member per heartbeat", format: "%.2f", target: "<= 1",
			value: func(r *simRun) float64 {
				return r.calls(phaseSteady, []string{"memberclusters", "memberclusters/status"}, benchutil.IsWrite) / members / intervals(r)
			},
			ok: func(v float64) bool { return v <= 1 }},
		{name: "steady: Lease writes per heartbeat (all members)", format: "%.2f", target: "<= 1 per member",
			value: func(r *simRun) float64 {
				return r.calls(phaseSteady, []string{"leases"}, benchutil.IsWrite) / intervals(r)
			},
			ok: func(v float64) bool { return v <= members }},
		{name: "steady: reconciles per second", format: "%.0f",
			value: func(r *simRun) float64 { return r.reconciles[phaseSteady] / r.seconds(phaseSteady) }},
		{name: "steady: API calls per second (hub+member, all)", format: "%.1f",
			value: func(r *simRun) float64 { return r.calls(phaseSteady, nil, nil) / r.seconds(phaseSteady) }},
	}, cpFigures([]int{phasePlace, phaseStatus, phaseSteady})...)
}

// printSimReport prints every figure of every run, its min / median / max, and its target.
func printSimReport(out io.Writer, cfg config, commit string, runs []simRun) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "Hub at fleet scale: %d RayServices on %d simulated members (one member API server), hub %s, "+
		"status changes at %.0f/s, heartbeat %v, steady %v, hub args %q, hub memory limit %q\n",
		cfg.services, cfg.members, commit, cfg.sim.statusRate, cfg.reportInterval, cfg.rollout.steady,
		strings.Join(cfg.hubArgs, " "), cfg.sim.memoryLimit)
	printFigures(w, simFigures(cfg), runs)
	_ = w.Flush()
}

// printFigures prints a header and, per figure, its value in every run, the spread and the
// target met or not.
func printFigures[R any](w io.Writer, figs []figure[R], runs []R) {
	for _, row := range figureRows(figs, runs, "run") {
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
}

// notMeasured is the cell of a value a run did not measure.
const notMeasured = "not measured"

// figureRows are the cells of the figures' table: a header (column "<column> 1", ...), then
// per figure its value in every run, the spread of the values measured, and the target with
// how many of them met it.
func figureRows[R any](figs []figure[R], runs []R, column string) [][]string {
	header := []string{"figure"}
	for i := range runs {
		header = append(header, fmt.Sprintf("%s %d", column, i+1))
	}
	rows := [][]string{append(header, "min / median / max", "target")}
	for _, f := range figs {
		var vals []float64
		row := []string{f.name}
		met := 0
		for i := range runs {
			v := f.value(&runs[i])
			if math.IsNaN(v) {
				row = append(row, notMeasured)
				continue
			}
			vals = append(vals, v)
			row = append(row, fmt.Sprintf(f.format, v))
			if f.ok != nil && f.ok(v) {
				met++
			}
		}
		if len(vals) == 0 {
			row = append(row, notMeasured)
		} else {
			lo, med, hi := spread(vals)
			row = append(row, fmt.Sprintf(f.format+" / "+f.format+" / "+f.format, lo, med, hi))
		}
		if f.ok != nil && len(vals) > 0 {
			row = append(row, fmt.Sprintf("%s: met in %d of %d", f.target, met, len(vals)))
		} else {
			row = append(row, f.target)
		}
		rows = append(rows, row)
	}
	return rows
}

// spread returns the minimum, the median (the lower middle of an even count) and the maximum.
func spread(vals []float64) (lo, med, hi float64) {
	if len(vals) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	return s[0], s[(len(s)-1)/2], s[len(s)-1]
}

// printSimBreakdown prints one run's API calls by resource and verb, per phase: per RayService
// in placement, per change in the status phase, per second in the steady state.
func printSimBreakdown(out io.Writer, cfg config, run int, r simRun) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	per := []struct {
		phase int
		name  string
		by    float64
		unit  string
	}{
		{phasePlace, "placement", float64(cfg.services), "per RayService"},
		{phaseStatus, "status changes", float64(max(r.changes, 1)), "per change"},
		{phaseSteady, "steady state", r.seconds(phaseSteady), "per second"},
	}
	for _, p := range per[:min(r.phasesDone, len(per))] {
		fmt.Fprintf(w, "run %d, %s (%.1f s): the hub's API calls\ttotal\t%s\n", run, p.name, r.seconds(p.phase), p.unit)
		for _, where := range []string{"hub", "member"} {
			wc := r.api[p.phase][where]
			for _, k := range wc.SortedKeys() {
				fmt.Fprintf(w, "  %s: %s %s\t%d\t%.3f\n", where, k.Resource, k.Verb, wc.ByKey[k], float64(wc.ByKey[k])/p.by)
			}
			if wc.Conflicts+wc.Failed > 0 {
				fmt.Fprintf(w, "  %s: 409 conflicts / other failures\t%d / %d\n", where, wc.Conflicts, wc.Failed)
				for _, k := range wc.SortedFailures() {
					fmt.Fprintf(w, "    failed: %s\t%d\n", k, wc.Failures[k])
				}
			}
		}
		if !cfg.sim.floor {
			fmt.Fprintf(w, "  reconciles\t%.0f\t%.3f\n", r.reconciles[p.phase], r.reconciles[p.phase]/p.by)
		}
		cp := r.cpPhase(p.phase)
		for i := range numCP {
			fmt.Fprintf(w, "  CPU: %s (s)\t%.1f\t%.3f\n", cpNames[i], cp[i].Seconds(), cp[i].Seconds()/p.by)
		}
	}
	_ = w.Flush()
}
