package main

// The hub against its floor (-sim -vs-floor): each of -runs pairs runs the floor (simfloor.go)
// and then simhub, each on a fresh fleet, one after the other, so that both see the same
// machine. The targets of issue 35 are ratios of the two, not absolute times, which on a shared
// 2-core machine move with whatever else runs: placement within 15 % of the floor's time, at
// most 1.2 reconciles per RayService, under 500 MB with the Go runtime's defaults, no writes in
// the steady state, and the hub's CPU per status change at most a quarter of the control
// planes'.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

// Targets of issue 35, ratios to the floor measured in the same invocation.
const (
	ratioTargetPlaced     = 1.15
	ratioTargetReconciles = 1.2
	// ratioTargetStatusCPU is the hub's CPU per status change over the control planes'.
	ratioTargetStatusCPU = 0.25
)

// ratioRun is one pair of -vs-floor: the floor's run and simhub's, and the machine's load
// before each.
type ratioRun struct {
	floor, hub simRun
	// loadFloor and loadHub are the 1-minute load average just before each run started.
	loadFloor, loadHub float64
	// statusFloorRate is the highest status-change rate the floor sustains with a p99 under
	// 1 s, and statusP99AtHalf the hub's status p99 at half that rate; zero: not measured.
	statusFloorRate float64
	statusP99AtHalf time.Duration
}

// checkVsFloor refuses the flags -vs-floor cannot honour, and -results without it.
func checkVsFloor(c simConfig) error {
	switch {
	case c.results != "" && !c.vsFloor:
		return errors.New("-results writes the ratios of -vs-floor: add -vs-floor")
	case !c.vsFloor:
		return nil
	case c.floor:
		return errors.New("-vs-floor runs the floor itself: drop -floor")
	case !noMemoryLimit(c.memoryLimit):
		return fmt.Errorf("-vs-floor measures the hub with the Go runtime's defaults: drop -hub-memory-limit %s", c.memoryLimit)
	}
	return nil
}

// runVsFloor measures -runs pairs, printing each run's breakdown as it ends, then both modes'
// reports and the ratios; -results receives the ratios as Markdown.
func runVsFloor(ctx context.Context, cfg config) error {
	bin, commit, cleanup, err := simHubBinary(ctx, cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	// The tree measured is the one simhub was just built from, whatever changes while it runs.
	describe := describeTree(ctx)
	var pairs []ratioRun
	for i := range cfg.rollout.runs {
		p, perr := runPair(ctx, cfg, bin, i+1)
		if perr != nil {
			if len(pairs) > 0 {
				printVsFloor(os.Stdout, cfg, commit, pairs)
			}
			return fmt.Errorf("pair %d: %w", i+1, perr)
		}
		pairs = append(pairs, p)
	}
	printVsFloor(os.Stdout, cfg, commit, pairs)
	if cfg.sim.results == "" {
		return nil
	}
	block := resultsBlock(resultsHeader{
		command:  "go run ./e2e/bench/hub " + shellJoin(os.Args[1:]),
		date:     time.Now().UTC(),
		describe: describe,
		cores:    cores(),
	}, ratioTable(cfg, commit, pairs))
	if err = writeResults(cfg.sim.results, block); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: ratios written to", cfg.sim.results)
	return nil
}

// runPair runs the floor, then simhub, each on a fresh fleet.
func runPair(ctx context.Context, cfg config, bin string, n int) (ratioRun, error) {
	var p ratioRun
	var err error
	floorCfg := floorConfig(cfg)
	if p.loadFloor, err = readLoadAvg(); err != nil {
		return p, err
	}
	fmt.Fprintf(os.Stderr, "bench: pair %d of %d, floor: the placement writes of %d RayServices on %d simulated members (load %.2f)\n",
		n, cfg.rollout.runs, cfg.services, cfg.members, p.loadFloor)
	if p.floor, err = runFloorOnce(ctx, floorCfg); err != nil {
		return p, fmt.Errorf("floor: %w", err)
	}
	printSimBreakdown(os.Stderr, floorCfg, n, p.floor)
	if p.loadHub, err = readLoadAvg(); err != nil {
		return p, err
	}
	hubCfg := cfg
	if st := p.floor.floor.status; st != nil && st.sustainable > 0 {
		// The hub is asked for half the rate the floor sustains (issue 35's status target).
		p.statusFloorRate = st.sustainable
		hubCfg.sim.statusRate = st.sustainable / 2
	}
	fmt.Fprintf(os.Stderr, "bench: pair %d of %d, simhub: %d RayServices on %d simulated members, status changes at %.0f/s (load %.2f)\n",
		n, cfg.rollout.runs, cfg.services, cfg.members, hubCfg.sim.statusRate, p.loadHub)
	if p.hub, err = runSimOnce(ctx, hubCfg, bin, n); err != nil {
		return p, fmt.Errorf("simhub: %w", err)
	}
	if p.statusFloorRate > 0 {
		p.statusP99AtHalf = benchutil.Percentile(p.hub.statusLat, 0.99)
	}
	printSimBreakdown(os.Stderr, cfg, n, p.hub)
	return p, nil
}

// floorConfig is cfg for the floor's runs and report: placement, then the status floor's
// rate search, whose rate sets the hub's.
func floorConfig(cfg config) config {
	cfg.sim.floor = true
	cfg.sim.statusFloor.enabled = true
	return cfg
}

// printVsFloor prints the floor's report, simhub's, then the ratios.
func printVsFloor(out io.Writer, cfg config, commit string, pairs []ratioRun) {
	floors, hubs := make([]simRun, len(pairs)), make([]simRun, len(pairs))
	for i, p := range pairs {
		floors[i], hubs[i] = p.floor, p.hub
	}
	printFloorReport(out, floorConfig(cfg), floors)
	fmt.Fprintln(out)
	printSimReport(out, cfg, commit, hubs)
	fmt.Fprintln(out)
	t := ratioTable(cfg, commit, pairs)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, t.title)
	for _, row := range t.rows {
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	_ = w.Flush()
}

// table is a report decided but not yet printed: a title and its cells, the header first.
type table struct {
	title string
	rows  [][]string
}

// ratioTable is the ratios of every pair, their spread and targets, then the absolute figures
// they come from.
func ratioTable(cfg config, commit string, pairs []ratioRun) table {
	return table{
		title: fmt.Sprintf("Hub against its floor, measured together: %d RayServices on %d simulated members, "+
			"%s (the floor, then simhub, each on a fresh fleet), hub %s; simhub with the Go runtime's defaults "+
			"(no GOMEMLIMIT: -hub-memory-limit 0; GOGC=100), heartbeat %v, steady %v, %d cores",
			cfg.services, cfg.members, pairsOf(len(pairs)), commit, cfg.reportInterval, cfg.rollout.steady, cores()),
		rows: figureRows(ratioFigures(cfg), pairs, "pair"),
	}
}

// pairsOf is "1 pair", "2 pairs"...
func pairsOf(n int) string {
	if n == 1 {
		return "1 pair"
	}
	return fmt.Sprintf("%d pairs", n)
}

// ratio is a over b; not measured when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return math.NaN()
	}
	return a / b
}

// measuredOr is v, or NaN (not measured) when v is zero.
func measuredOr(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// heapSummary is the run's live heap, from simhub's collections up to its last phase's end.
func (r *simRun) heapSummary() heapSummary {
	end := time.Time{}
	if r.phasesDone > 0 {
		end = r.windows[r.phasesDone-1].To
	}
	return r.heap.summarize(r.windows[phasePlace], end)
}

// ratioFigures are the ratio table's rows: the ratios and the hub's own targets first, then the
// absolute figures.
func ratioFigures(cfg config) []figure[ratioRun] {
	n := float64(cfg.services)
	pct := func(d []time.Duration, q float64) float64 { return benchutil.Percentile(d, q).Seconds() }
	cpPlace := func(r *simRun) float64 { return r.cpPhase(phasePlace).total().Seconds() }
	perChange := func(r *simRun, cpu float64) float64 { return ratio(1000*cpu, float64(r.changes)) }
	hubStatusCPU := func(p *ratioRun) float64 { return p.hub.cpu(phaseStatus) }
	cpStatusCPU := func(p *ratioRun) float64 { return p.hub.cpPhase(phaseStatus).total().Seconds() }
	heap := func(f func(s heapSummary) float64) func(p *ratioRun) float64 {
		return func(p *ratioRun) float64 { return f(p.hub.heapSummary()) }
	}
	const informative = "informative"
	return []figure[ratioRun]{
		{name: "placement time, hub / floor (first create -> last member copy)", format: "%.2f", target: "<= 1.15",
			value: func(p *ratioRun) float64 { return ratio(p.hub.placedIn.Seconds(), p.floor.placedIn.Seconds()) },
			ok:    func(v float64) bool { return v <= ratioTargetPlaced }},
		// The hub's placement phase ends once its queue is empty and -settle has passed, the
		// floor's with its last write answered: the hub run's has the settle's heartbeats too.
		{name: "control planes' CPU in placement, hub run / floor run", format: "%.2f", target: informative,
			value: func(p *ratioRun) float64 { return ratio(cpPlace(&p.hub), cpPlace(&p.floor)) }},
		{name: "hub CPU in placement / control planes' CPU in placement of the hub run", format: "%.2f", target: informative,
			value: func(p *ratioRun) float64 { return ratio(p.hub.cpu(phasePlace), cpPlace(&p.hub)) }},
		{name: "reconciles per RayService in placement", format: "%.2f", target: "<= 1.2",
			value: func(p *ratioRun) float64 { return p.hub.reconciles[phasePlace] / n },
			ok:    func(v float64) bool { return v <= ratioTargetReconciles }},
		{name: "hub peak RSS, no GOMEMLIMIT (MiB)", format: "%.0f", target: "< 500 MB (477 MiB)",
			value: func(p *ratioRun) float64 { return float64(p.hub.peakRSS()) / (1 << 20) },
			ok:    func(v float64) bool { return v < simTargetRSSBytes/(1<<20) }},
		{name: "live heap per RayService after placement (KiB)", format: "%.1f", target: informative,
			value: heap(func(s heapSummary) float64 { return 1024 * s.livePlaced / n })},
		{name: "  live heap at placement's last collection (MiB)", format: "%.0f",
			value: heap(func(s heapSummary) float64 { return s.livePlaced })},
		{name: "  peak live heap in placement (MiB)", format: "%.0f",
			value: heap(func(s heapSummary) float64 { return s.peakPlace })},
		{name: "  peak live heap over the run (MiB)", format: "%.0f",
			value: heap(func(s heapSummary) float64 { return s.peakRun })},
		{name: "  peak heap goal over the run (MiB)", format: "%.0f",
			value: heap(func(s heapSummary) float64 { return s.goalRun })},
		{name: "  goroutine stacks at the run's peak live heap (MiB)", format: "%.0f",
			value: heap(func(s heapSummary) float64 { return s.stacksAtPeak })},
		{name: "steady: writes to RayServices, bindings, revisions", format: "%.0f", target: "0",
			value: func(p *ratioRun) float64 { return p.hub.calls(phaseSteady, steadyWork, benchutil.IsWrite) },
			ok:    func(v float64) bool { return v == 0 }},
		{name: "floor: highest status-change rate with p99 < 1 s (/s)", format: "%.0f",
			value: func(p *ratioRun) float64 { return measuredOr(p.statusFloorRate) }},
		{name: "hub status p99 at half that rate (ms)", format: "%.0f", target: "< 1000 ms",
			value: func(p *ratioRun) float64 { return measuredOr(float64(p.statusP99AtHalf.Milliseconds())) },
			ok:    func(v float64) bool { return v < float64(simTargetStatusP99.Milliseconds()) }},
		{name: "hub CPU per status change / control planes' CPU per status change (%)", format: "%.0f", target: "<= 25 %",
			value: func(p *ratioRun) float64 { return 100 * ratio(hubStatusCPU(p), cpStatusCPU(p)) },
			ok:    func(v float64) bool { return v <= 100*ratioTargetStatusCPU }},
		{name: "floor: first create -> last member copy (s)", format: "%.1f",
			value: func(p *ratioRun) float64 { return p.floor.placedIn.Seconds() }},
		{name: "hub: first create -> last member copy (s)", format: "%.1f",
			value: func(p *ratioRun) float64 { return p.hub.placedIn.Seconds() }},
		{name: "floor: per RayService, create -> all copies p50 (s)", format: "%.2f",
			value: func(p *ratioRun) float64 { return pct(p.floor.placeLat, 0.5) }},
		{name: "floor: per RayService, create -> all copies p99 (s)", format: "%.2f",
			value: func(p *ratioRun) float64 { return pct(p.floor.placeLat, 0.99) }},
		{name: "hub: per RayService, create -> all copies p50 (s)", format: "%.2f",
			value: func(p *ratioRun) float64 { return pct(p.hub.placeLat, 0.5) }},
		{name: "hub: per RayService, create -> all copies p99 (s)", format: "%.2f",
			value: func(p *ratioRun) float64 { return pct(p.hub.placeLat, 0.99) }},
		{name: "hub: status change -> hub p50 (ms)", format: "%.0f",
			value: func(p *ratioRun) float64 { return 1000 * pct(p.hub.statusLat, 0.5) }},
		{name: "hub: status change -> hub p99 (ms)", format: "%.0f",
			value: func(p *ratioRun) float64 { return 1000 * pct(p.hub.statusLat, 0.99) }},
		{name: fmt.Sprintf("hub: status changes sent per second (asked: half the floor's rate, or %.0f)", cfg.sim.statusRate), format: "%.0f",
			value: func(p *ratioRun) float64 { return ratio(float64(p.hub.changes), p.hub.sentIn.Seconds()) }},
		{name: "hub CPU per status change (ms)", format: "%.2f",
			value: func(p *ratioRun) float64 { return perChange(&p.hub, hubStatusCPU(p)) }},
		{name: "control planes' CPU per status change (ms)", format: "%.2f",
			value: func(p *ratioRun) float64 { return perChange(&p.hub, cpStatusCPU(p)) }},
		{name: "load average (1 min) before the floor run", format: "%.2f",
			value: func(p *ratioRun) float64 { return p.loadFloor }},
		{name: "load average (1 min) before the hub run", format: "%.2f",
			value: func(p *ratioRun) float64 { return p.loadHub }},
	}
}

// peakRSS is the hub's peak RSS over the phases that ended.
func (r *simRun) peakRSS() int64 {
	var peak int64
	for _, u := range r.usage[:r.phasesDone] {
		peak = max(peak, u.PeakRSSBytes)
	}
	return peak
}

// readLoadAvg is the 1-minute load average.
func readLoadAvg() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	return parseLoadAvg(data)
}

// parseLoadAvg reads the 1-minute load average out of /proc/loadavg's content.
func parseLoadAvg(data []byte) (float64, error) {
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, errors.New("empty /proc/loadavg")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc/loadavg %q: %w", fields[0], err)
	}
	return v, nil
}
