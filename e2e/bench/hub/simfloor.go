package main

// The floor of the scale benchmark (-sim -floor): the same control planes, members, policies,
// heartbeats and RayServices as -sim, but no simhub. A replay writer (package floor) makes, for
// each RayService as soon as the benchmark's create is answered, the API writes the hub's first
// reconcile makes to place it, with the hub's 16 workers, as the hub's identity and field
// managers, and with the watches the hub's informers would hold open. What placement then costs
// the control planes is what it costs them under a hub that costs nothing: the first create to
// the last copy, and the control planes' CPU over the cores, bound any hub's placement on the
// machine from below.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/hub/floor"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// floorRun is what the replay writer itself saw in one run.
type floorRun struct {
	// wroteIn is the first create to the last write answered (events included).
	wroteIn time.Duration
	// calls are the requests the writer sent; eventsFailed the events refused or unanswered.
	calls, eventsFailed int64
	// retries are the writes sent again after an overloaded or timed-out answer.
	retries int64
	// selfCPU is this process's CPU in placement: the creates, the writer, and the watches'
	// decoding (the benchmark's own and those held open for the hub), all on the same cores.
	selfCPU time.Duration
	// status is the status floor's search (-status-floor), nil without it.
	status *statusFloor
}

// runFloor measures -runs fresh runs of the floor, printing each run's figures as it ends and
// the spread at the end.
func runFloor(ctx context.Context, cfg config) error {
	var runs []simRun
	for i := range cfg.rollout.runs {
		fmt.Fprintf(os.Stderr, "bench: floor run %d of %d: the placement writes of %d RayServices on %d simulated members\n",
			i+1, cfg.rollout.runs, cfg.services, cfg.members)
		run, err := runFloorOnce(ctx, cfg)
		if err != nil {
			return fmt.Errorf("floor run %d: %w", i+1, err)
		}
		runs = append(runs, run)
		printSimBreakdown(os.Stderr, cfg, i+1, run)
	}
	printFloorReport(os.Stdout, cfg, runs)
	return nil
}

// runFloorOnce starts a fresh fleet, replays the placement of every RayService, measures and
// stops everything.
func runFloorOnce(ctx context.Context, cfg config) (simRun, error) {
	var run simRun
	f, err := startSimFleet(ctx, cfg)
	if err != nil {
		return run, err
	}
	defer f.stop()
	if cfg.keep {
		fmt.Fprintln(os.Stderr, "bench: hub state and audit log in", f.hub.Dir)
		fmt.Fprintln(os.Stderr, "bench: member state and audit log in", f.member.Dir)
	}
	f.copies = newSimCopies(f.names, cfg.services)
	hbCtx, stopHeartbeats := context.WithCancel(ctx)
	defer stopHeartbeats()
	// The heartbeats go on as under simhub: the same background load on the member server.
	if err = f.heartbeat(hbCtx, cfg.reportInterval); err != nil {
		return run, err
	}
	if err = f.hub.CreateNamespace(ctx, benchNamespace); err != nil {
		return run, err
	}
	for _, p := range simPolicies {
		if err = f.hubClient.Create(ctx, p.object(benchNamespace)); err != nil {
			return run, fmt.Errorf("creating PlacementPolicy %s: %w", p.name, err)
		}
	}
	err = informAll(ctx, f.member, nil, func(rs *rayv1.RayService, deleted bool) {
		f.copies.observe(rs.Namespace, rs.Name, rs.Generation, deleted, time.Now())
	})
	if err != nil {
		return run, err
	}
	w, err := newFloorWriter(ctx, cfg, f)
	if err != nil {
		return run, err
	}
	if err = replay(ctx, cfg, f, w, &run); err != nil {
		return run, err
	}
	run.phasesDone = 1
	m := &simMeasure{cfg: cfg, f: f, run: &run}
	if err = m.count(); err != nil || !cfg.sim.statusFloor.enabled {
		return run, err
	}
	sf, err := measureStatusFloor(ctx, cfg, f, w)
	run.floor.status = &sf
	return run, err
}

// newFloorWriter is a replay writer with the hub's identity and user agent on both servers,
// one client per member, and (-floor-watches) the hub's watches open.
func newFloorWriter(ctx context.Context, cfg config, f *simFleet) (*floor.Writer, error) {
	hubCfg, err := hubIdentity(f.hub)
	if err != nil {
		return nil, err
	}
	memberCfg, err := hubIdentity(f.member)
	if err != nil {
		return nil, err
	}
	hubClient, err := client.New(hubCfg, client.Options{Scheme: localcluster.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the floor's hub client: %w", err)
	}
	members := make([]floor.Member, len(f.names))
	for i, name := range f.names {
		// Its own transport, so its own connection, as each member's client in the hub.
		c, cerr := client.New(rest.CopyConfig(memberCfg), client.Options{Scheme: localcluster.Scheme})
		if cerr != nil {
			return nil, fmt.Errorf("creating the floor's client of %s: %w", name, cerr)
		}
		members[i] = floor.Member{Name: name, Labels: simMemberLabels(i), Client: c}
	}
	if cfg.sim.floorWatches {
		if err = floor.Watch(ctx, hubCfg, memberCfg, localcluster.Scheme, benchNamespace, f.names); err != nil {
			return nil, fmt.Errorf("opening the hub's watches: %w", err)
		}
	}
	return floor.New(hubClient, members), nil
}

// hubIdentity is a REST config of c as the hub's user, with the hub's user agent (so its field
// manager) and no client-side rate limit: a hub that costs nothing does not wait either.
func hubIdentity(c *localcluster.Cluster) (*rest.Config, error) {
	_, cfg, err := c.UserKubeconfig(hubUser)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = floor.UserAgent
	cfg.QPS, cfg.Burst = -1, 0
	return cfg, nil
}

// replay creates the RayServices as -sim does, handing each to the writer as its create is
// answered, and waits for every copy and every write; the placement window ends with the last
// write answered.
func replay(ctx context.Context, cfg config, f *simFleet, w *floor.Writer, run *simRun) error {
	plan := floorPlan(cfg.services, cfg.members)
	items := make(chan floor.Item, cfg.services)
	var err error
	if run.cpFrom[phasePlace], err = readControlPlanes(f.hub, f.member); err != nil {
		return err
	}
	self, err := localcluster.ReadUsage(os.Getpid())
	if err != nil {
		return err
	}
	start := time.Now()
	wrote := make(chan error, 1)
	go func() { wrote <- w.Run(ctx, items, floor.DefaultWorkers) }()
	err = createSimServices(ctx, cfg, f.hubClient, f.copies.placed, func(i int, rs *rayv1.RayService) {
		members := make([]string, len(plan[i]))
		for k, m := range plan[i] {
			members[k] = f.names[m]
		}
		items <- floor.Item{RayService: rs, Policy: policyOf(i).name, Members: members}
	})
	close(items)
	run.createdIn = time.Since(start)
	if err != nil {
		// The writer ends once the items it has are placed.
		return errors.Join(err, <-wrote)
	}
	if err = <-wrote; err != nil {
		return fmt.Errorf("replaying the hub's writes: %w", err)
	}
	run.floor.wroteIn = time.Since(start)
	run.floor.calls, run.floor.eventsFailed, run.floor.retries = w.Calls(), w.EventsFailed(), w.Retries()
	end := time.Now()
	if run.cp[phasePlace], err = readControlPlanes(f.hub, f.member); err != nil {
		return err
	}
	selfEnd, err := localcluster.ReadUsage(os.Getpid())
	if err != nil {
		return err
	}
	run.floor.selfCPU = selfEnd.CPU - self.CPU
	select {
	case <-f.copies.placed.AllDone():
	case <-time.After(cfg.timeout):
		return fmt.Errorf("member copies: only %d of %d RayServices complete after %v", f.copies.placed.ReadyCount(), cfg.services, cfg.timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	var placedAt time.Time
	run.placeLat, placedAt = f.copies.placed.Latencies()
	run.placedIn = placedAt.Sub(start)
	run.fewest, run.most, run.copies = f.copies.spread()
	run.windows[phasePlace] = benchutil.Window{From: start, To: end}
	fmt.Fprintf(os.Stderr, "bench: floor placed %d copies in %v, every write answered in %v (creates sent in %v); control planes' CPU %.1f s\n",
		run.copies, benchutil.Round(run.placedIn), benchutil.Round(run.floor.wroteIn), benchutil.Round(run.createdIn),
		run.cpPhase(phasePlace).total().Seconds())
	return nil
}

// floorFigures are the floor report's rows: placement only.
func floorFigures(cfg config) []simFigure {
	n := float64(cfg.services)
	pct := func(d []time.Duration, q float64) float64 { return benchutil.Percentile(d, q).Seconds() }
	writer := func(f func(fr floorRun) float64) func(r *simRun) float64 {
		return func(r *simRun) float64 { return f(r.floor) }
	}
	figs := []simFigure{
		{name: "first create -> last member copy (s)", format: "%.1f", target: "< 60 s",
			value: func(r *simRun) float64 { return r.placedIn.Seconds() },
			ok:    func(v float64) bool { return v < simTargetPlaced.Seconds() }},
		{name: "  of which the harness sending the creates (s)", format: "%.1f",
			value: func(r *simRun) float64 { return r.createdIn.Seconds() }},
		{name: "first create -> last write answered, events included (s)", format: "%.1f",
			value: writer(func(fr floorRun) float64 { return fr.wroteIn.Seconds() })},
		{name: "per RayService, create -> all copies p50 (s)", format: "%.2f",
			value: func(r *simRun) float64 { return pct(r.placeLat, 0.5) }},
		{name: "per RayService, create -> all copies p99 (s)", format: "%.2f",
			value: func(r *simRun) float64 { return pct(r.placeLat, 0.99) }},
		{name: "member copies", format: "%.0f", value: func(r *simRun) float64 { return float64(r.copies) }},
		{name: "placement: API calls per RayService (hub+member, audit logs)", format: "%.2f",
			value: func(r *simRun) float64 { return r.calls(phasePlace, rayServiceResources, nil) / n }},
		{name: "  writes per RayService", format: "%.2f",
			value: func(r *simRun) float64 { return r.calls(phasePlace, rayServiceResources, benchutil.IsWrite) / n }},
		{name: "  reads per RayService", format: "%.2f",
			value: func(r *simRun) float64 { return r.calls(phasePlace, rayServiceResources, isRead) / n }},
		{name: "  requests the writer sent per RayService", format: "%.2f",
			value: writer(func(fr floorRun) float64 { return float64(fr.calls) / n })},
		{name: "  of which retries after an overloaded or timed-out answer", format: "%.0f",
			value: writer(func(fr floorRun) float64 { return float64(fr.retries) })},
		{name: "  events refused or unanswered", format: "%.0f",
			value: writer(func(fr floorRun) float64 { return float64(fr.eventsFailed) })},
		{name: "the benchmark's own CPU in placement: creates, writer, watches (s)", format: "%.1f",
			value: writer(func(fr floorRun) float64 { return fr.selfCPU.Seconds() })},
	}
	return append(figs, cpFigures([]int{phasePlace})...)
}

// printFloorReport prints the floor's figures of every run, their spread and the target.
func printFloorReport(out io.Writer, cfg config, runs []simRun) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "Floor of the hub at fleet scale: the hub's placement writes for %d RayServices on %d simulated members "+
		"(one member API server), replayed by %d workers with no hub, hub watches %t, heartbeat %v, %d cores\n",
		cfg.services, cfg.members, floor.DefaultWorkers, cfg.sim.floorWatches, cfg.reportInterval, cores())
	printFigures(w, floorFigures(cfg), runs)
	_ = w.Flush()
	for i := range runs {
		if sf := runs[i].floor.status; sf != nil {
			fmt.Fprintf(out, "\nRun %d: ", i+1)
			printStatusFloor(out, *sf)
		}
	}
}
