package main

// The scale benchmark (-sim) measures the hub against 100 simulated members on one machine:
// the hub control plane runs simhub (bin/hub's wiring, hub/server, with the simulated-member
// provider of simmembers in place of the kubeconfig provider), every member is backed by ONE
// member control plane, and the harness plays the spokes (ClusterReports every heartbeat
// interval, the copies' statuses). Each run starts afresh and measures placement (first create
// to the last member copy), a paced stream of member status changes (change to hub status),
// and a steady state with nothing to do; -runs repeats it and the report gives the spread.
//
//	go run ./e2e/bench/hub -sim -members 100 -services 10000 -runs 3

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rayfleet/rayfleet/shared/manageropts"
)

// simConfig is the scale benchmark's part of the command line.
type simConfig struct {
	enabled bool
	// bin is a prebuilt simhub; empty builds one from the working tree.
	bin           string
	statusRate    float64
	statusChanges int
	// profileDir receives simhub's CPU and heap profiles; empty takes none.
	profileDir string
	// leaderElect runs simhub with --leader-elect, as the chart runs bin/hub.
	leaderElect bool
	// memoryLimit is the container memory limit simhub runs as if under: its soft limit
	// (GOMEMLIMIT) is the share of it bin/hub takes from its cgroup; empty or "0" sets none,
	// so that the default run shows what the hub holds, not what a limit makes it collect.
	memoryLimit string
	// floor replaces simhub by the replay of its placement writes (floor.go); floorWatches
	// keeps the hub's watches of the kinds it writes open meanwhile.
	floor, floorWatches bool
	// vsFloor runs the floor and simhub in turn and reports their ratios (vsfloor.go);
	// results is the file the ratios are written into, empty for none.
	vsFloor bool
	results string
	// rerender rewrites that file's generated section from its own figures, measuring nothing.
	rerender string
	// statusFloor measures the floor of the status path after the placement replay.
	statusFloor statusFloorConfig
}

// Defaults of the flags the scale benchmark shares with the others, where its own differ.
const (
	simDefaultRuns           = 1
	simDefaultSteady         = 5 * time.Minute
	simDefaultReportInterval = 10 * time.Second
)

func (c *simConfig) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.enabled, "sim", false,
		"measure the hub at fleet scale against -members simulated members backed by one member API server (simhub), instead of bin/hub on real members")
	fs.StringVar(&c.bin, "simhub", "", "prebuilt simhub binary (-sim); empty builds e2e/bench/hub/simhub")
	fs.Float64Var(&c.statusRate, "status-rate", 200, "member status changes per second (-sim)")
	fs.IntVar(&c.statusChanges, "status-changes", 0, "member status changes to send (-sim); 0 turns every copy Ready")
	fs.StringVar(&c.profileDir, "profile", "",
		"directory for simhub's CPU profiles of each phase and its heap after placement (-sim); empty takes none")
	fs.StringVar(&c.memoryLimit, "hub-memory-limit", "0",
		"the hub container's memory limit simhub runs as if under (-sim), 512Mi being the hub chart's default: GOMEMLIMIT is set to the share of it bin/hub gives the Go runtime from its cgroup; 0 sets no soft limit")
	fs.BoolVar(&c.floor, "floor", false,
		"with -sim: no simhub; replay the API writes the hub makes to place each RayService, and measure what they cost the API servers")
	fs.BoolVar(&c.floorWatches, "floor-watches", true,
		"with -floor: hold open the watches a hub's informers would (hub RayServices, bindings, revisions; each member's copies)")
	fs.BoolVar(&c.vsFloor, "vs-floor", false,
		"with -sim: each of -runs pairs runs the floor (-floor) and then simhub, each on a fresh fleet, and reports the hub's ratios to the floor beside their targets (simhub with no GOMEMLIMIT: -hub-memory-limit must be 0)")
	fs.StringVar(&c.rerender, "results-rerender", "",
		"rewrite this file's bench-hub-floor section from the figures it holds, in this version's layout, and measure nothing")
	fs.StringVar(&c.results, "results", "",
		"with -vs-floor: write the ratio table as Markdown into this file, between its bench-hub-floor markers (added at the end when absent)")
	c.statusFloor.bindFlags(fs)
	fs.BoolVar(&c.leaderElect, "leader-elect", true,
		"run simhub with leader election, as the hub chart runs bin/hub (-sim); its Lease writes are a steady-state figure")
}

// softMemoryLimit is the GOMEMLIMIT environment entry bin/hub would run with under a container
// memory limit of limit (manageropts.SetMemoryLimit: MemoryLimitRatio of it); nil for none.
func softMemoryLimit(limit string) ([]string, error) {
	if noMemoryLimit(limit) {
		return nil, nil
	}
	q, err := resource.ParseQuantity(limit)
	if err != nil {
		return nil, fmt.Errorf("-hub-memory-limit %q: %w", limit, err)
	}
	return []string{fmt.Sprintf("GOMEMLIMIT=%d", int64(float64(q.Value())*manageropts.MemoryLimitRatio))}, nil
}

// noMemoryLimit reports whether -hub-memory-limit asks for none.
func noMemoryLimit(limit string) bool { return limit == "" || limit == "0" }

// hubEnv is simhub's environment beyond this process's: the collection trace (simheap.go),
// and the soft limit of -hub-memory-limit or, without one, the Go runtime's defaults pinned,
// so that neither this process's environment nor its cgroup's limit (which bin/hub's
// SetMemoryLimit would read) gives simhub a limit the report does not name.
func hubEnv(limit string) ([]string, error) {
	env := []string{gcTraceEnv()}
	if noMemoryLimit(limit) {
		return append(env, "GOMEMLIMIT=off", "GOGC=100"), nil
	}
	soft, err := softMemoryLimit(limit)
	return append(env, soft...), err
}

// simDefaults applies the scale benchmark's defaults to the shared flags the command line did
// not set: one run, a 5-minute steady state, and the spoke's 10 s report interval (the
// heartbeat interval the steady-state targets count per).
func simDefaults(c *config, set map[string]bool) {
	if !set["runs"] {
		c.rollout.runs = simDefaultRuns
	}
	if !set["steady"] {
		c.rollout.steady = simDefaultSteady
	}
	if !set["report-interval"] {
		c.reportInterval = simDefaultReportInterval
	}
	c.rollout.runs = max(1, c.rollout.runs)
	if c.sim.statusRate <= 0 {
		c.sim.statusRate = 200
	}
}

// runSim builds simhub once and measures -runs fresh runs, printing each run's figures as it
// ends and the spread at the end.
func runSim(ctx context.Context, cfg config) error {
	if cfg.sim.vsFloor {
		return runVsFloor(ctx, cfg)
	}
	if cfg.sim.floor {
		return runFloor(ctx, cfg)
	}
	bin, commit, cleanup, err := simHubBinary(ctx, cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	var runs []simRun
	for i := range cfg.rollout.runs {
		fmt.Fprintf(os.Stderr, "bench: scale run %d of %d: %d RayServices on %d simulated members\n",
			i+1, cfg.rollout.runs, cfg.services, cfg.members)
		run, err := runSimOnce(ctx, cfg, bin, i+1)
		if err != nil && run.phasesDone > 0 {
			// What the run measured before it failed, marked as such.
			fmt.Fprintf(os.Stderr, "bench: run %d ended after %d of %d phases: %v\n", i+1, run.phasesDone, numPhases, err)
			printSimBreakdown(os.Stderr, cfg, i+1, run)
			printSimReport(os.Stdout, cfg, commit+fmt.Sprintf(" (run %d: first %d phases only)", i+1, run.phasesDone),
				append(runs, run))
		}
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		runs = append(runs, run)
		printSimBreakdown(os.Stderr, cfg, i+1, run)
	}
	printSimReport(os.Stdout, cfg, commit, runs)
	return nil
}

// simHubBinary is -simhub, or simhub built from the working tree into a temporary directory
// that cleanup removes; commit labels the reports.
func simHubBinary(ctx context.Context, cfg config) (bin, commit string, cleanup func(), err error) {
	if cfg.sim.bin != "" {
		return cfg.sim.bin, "prebuilt", func() {}, nil
	}
	dir, err := os.MkdirTemp("", "rayfleet-simhub-")
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	if bin, commit, err = buildSimHub(ctx, dir); err != nil {
		cleanup()
		return "", "", nil, err
	}
	return bin, commit, cleanup, nil
}

// runSimOnce starts a fresh fleet, joins the members, measures and stops everything.
func runSimOnce(ctx context.Context, cfg config, bin string, n int) (simRun, error) {
	f, err := startSimFleet(ctx, cfg)
	if err != nil {
		return simRun{}, err
	}
	defer f.stop()
	if cfg.keep {
		fmt.Fprintln(os.Stderr, "bench: hub state, logs and audit log in", f.hub.Dir)
		fmt.Fprintln(os.Stderr, "bench: member state and audit log in", f.member.Dir)
	}
	f.copies = newSimCopies(f.names, cfg.services)
	hbCtx, stopHeartbeats := context.WithCancel(ctx)
	defer stopHeartbeats()
	if err = f.heartbeat(hbCtx, cfg.reportInterval); err != nil {
		return simRun{}, err
	}
	var prof *profiler
	var extra []string
	if cfg.sim.profileDir != "" {
		addr, aerr := freeAddr()
		if aerr != nil {
			return simRun{}, aerr
		}
		if aerr = os.MkdirAll(cfg.sim.profileDir, 0o755); aerr != nil {
			return simRun{}, aerr
		}
		prof = &profiler{dir: cfg.sim.profileDir, base: "http://" + addr, run: n}
		extra = []string{"--pprof-bind-address=" + addr}
		defer prof.wait()
	}
	if err = f.startHub(ctx, cfg, bin, extra...); err != nil {
		return simRun{}, err
	}
	started, err := processStart(f.hubProc.PID())
	if err != nil {
		return simRun{}, fmt.Errorf("reading simhub's start: %w", err)
	}
	if err = f.join(ctx); err != nil {
		return simRun{}, err
	}
	if err = f.waitMembersReady(ctx); err != nil {
		f.hub.DumpLogs(os.Stderr, 60)
		return simRun{}, err
	}
	run, err := measureSim(ctx, cfg, f, prof)
	if err != nil {
		f.hub.DumpLogs(os.Stderr, 60)
	}
	// Read before the fleet stops and its directory, simhub's log with it, goes.
	var terr error
	if run.heap, terr = readHeapTrace(f.hubProc.LogPath, started); terr != nil {
		err = errors.Join(err, terr)
	}
	return run, err
}
