// Command hub benchmarks the hub alone: bin/hub on a hub control plane with members that are
// bare control planes (no spokes, no kwok; the harness writes their ClusterReports and their
// RayServices' status), so that every figure is the hub's. It creates many RayServices on the
// hub, spread over the members by a "default" PlacementPolicy with clusters: 1, and reports how
// fast every member copy exists; then it turns the copies Ready one by one in a paced stream
// and reports how fast each change shows on the hub RayService; and the hub's memory, CPU and
// API writes per RayService (from the audit logs of the hub and the members, by the hub's own
// client certificate).
// With -rollout it measures a fleet rollout instead, on a fleet with spokes: see rollout.go.
// With -sim it measures the hub at fleet scale, against simulated members: see sim.go; with
// -sim -floor, what the hub's placement writes cost the API servers with no hub: simfloor.go;
// with -status-floor too, then the highest rate of member status changes shown on the hub with
// p99 < 1 s when the hub's status writes cost nothing: simstatusfloor.go; with -sim -vs-floor,
// both floors and simhub in turn in one invocation, simhub's status changes at half the
// floor's rate, and the hub's ratios to the floor (-results writes them into RESULTS.md):
// vsfloor.go.
// It imports only benchutil, simmembers (for its naming of the simulated members' objects),
// floor (-floor's replay, which builds the hub's objects with hub/'s own functions) and shared/
// (the local fleet and test helpers), never hub/, spoke/ or cmd/ itself: it measures bin/hub,
// or simhub, as a process.
//
//	go run ./e2e/bench/hub -services 1000 -members 3
//	go run ./e2e/bench/hub -rollout -runs 3
//	go run ./e2e/bench/hub -sim -members 100 -services 10000 -runs 3
//	go run ./e2e/bench/hub -sim -floor -members 100 -services 10000
//	go run ./e2e/bench/hub -sim -vs-floor -members 100 -services 10000 -runs 2 -results e2e/bench/RESULTS.md
//	go run ./e2e/bench/hub -sim -floor -status-floor -members 100 -services 10000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// hubUser is the identity of bin/hub on the hub and on every member; the audit policies record
// its writes only.
const hubUser = localfleet.HubUser

// benchNamespace holds the benchmark's RayServices on the hub (and their copies on members).
const benchNamespace = "bench"

// Targets from issue 4, printed next to the figures.
const (
	targetPlaced    = 60 * time.Second
	targetStatusP99 = time.Second
	targetRSSBytes  = 300 << 20
)

// config is the command line.
type config struct {
	services, members, parallel int
	hubBin                      string
	hubArgs                     []string
	reportInterval              time.Duration
	statusInterval              time.Duration
	timeout, settle             time.Duration
	keep                        bool
	auditLevel                  string
	rollout                     rolloutConfig
	sim                         simConfig
}

func main() {
	cfg := parseFlags()
	if cfg.sim.rerender != "" {
		if err := rerenderResults(cfg.sim.rerender); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.sim.enabled {
		benchutil.Main(func(ctx context.Context) error { return runSim(ctx, cfg) })
		return
	}
	if cfg.rollout.enabled {
		benchutil.Main(func(ctx context.Context) error { return runRollout(ctx, cfg) })
		return
	}
	benchutil.Main(func(ctx context.Context) error { return run(ctx, cfg) })
}

// parseFlags reads the command line; the smoke test gives its own arguments.
func parseFlags() config {
	c, err := parseArgs(flag.CommandLine, os.Args[1:])
	if err != nil { // flag.CommandLine has said why
		os.Exit(2)
	}
	return c
}

// parseArgs reads args into a config with fs, which holds every flag afterwards.
func parseArgs(fs *flag.FlagSet, args []string) (config, error) {
	var c config
	var hubArgs string
	fs.IntVar(&c.services, "services", 1000, "RayServices to create on the hub")
	fs.IntVar(&c.members, "members", 3, "member control planes")
	fs.IntVar(&c.parallel, "parallel", 100, "concurrent creates")
	fs.StringVar(&c.hubBin, "hub", filepath.Join(localfleet.DefaultRayFleetBin(), "hub"), "hub binary")
	fs.StringVar(&hubArgs, "hub-args", "", "extra hub flags, space separated (e.g. --max-concurrent-reconciles=32)")
	fs.DurationVar(&c.statusInterval, "status-interval", 20*time.Millisecond,
		"pace of the member status changes: one copy turned Ready every interval")
	fs.DurationVar(&c.reportInterval, "report-interval", 2*time.Second,
		"how often the harness rewrites each member's ClusterReport, as a spoke's --report-interval (-sim: default 10s, the spoke's)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up on a phase after this long")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "after the last change, wait until the hub has not written for this long")
	fs.BoolVar(&c.keep, "keep", false, "keep the control planes' state dirs (logs, audit logs)")
	fs.StringVar(&c.auditLevel, "audit-level", "Metadata", "audit level of the hub's writes: Metadata, or Request to keep their bodies")
	spokeArgs := c.rollout.bindFlags(fs)
	c.sim.bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	// -floor and -vs-floor are modes of the scale benchmark: its fleet, its workload, its
	// defaults; -status-floor is one of -floor.
	c.sim.floor = c.sim.floor || c.sim.statusFloor.enabled
	c.sim.enabled = c.sim.enabled || c.sim.floor || c.sim.vsFloor
	if err := checkVsFloor(c.sim); err != nil {
		fmt.Fprintln(fs.Output(), err)
		return c, err
	}
	if c.sim.enabled {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		simDefaults(&c, set)
	}
	c.hubArgs = strings.Fields(hubArgs)
	c.rollout.spokeArgs = strings.Fields(*spokeArgs)
	c.parallel = max(1, c.parallel)
	c.members = max(1, c.members)
	return c, nil
}

func run(ctx context.Context, cfg config) error {
	opts, err := controlPlaneOptions(cfg)
	if err != nil {
		return err
	}
	b, err := startControlPlanes(ctx, opts)
	if err != nil {
		return err
	}
	defer b.stop()
	if cfg.keep {
		b.printDirs()
	}
	// The reports count the copies as the spokes would see them; set before the heartbeats
	// start reading it.
	copies := newCopyTracker(cfg.services)
	b.copiesOn = copies.on
	// The harness's heartbeats stop with the run.
	hbCtx, stopHeartbeats := context.WithCancel(ctx)
	defer stopHeartbeats()
	if err = b.heartbeat(hbCtx, cfg.reportInterval); err != nil {
		return err
	}
	if err = b.startHub(ctx, cfg); err != nil {
		return err
	}
	if err = b.join(ctx); err != nil {
		return err
	}
	if err = b.waitMembersReady(ctx); err != nil {
		b.hub.DumpLogs(os.Stderr, 60)
		return err
	}
	res, err := measure(ctx, cfg, b, copies)
	if err != nil {
		b.hub.DumpLogs(os.Stderr, 60)
		return err
	}
	printReport(os.Stdout, cfg, res)
	return nil
}

// result is everything the report shows.
type result struct {
	placedIn, statusIn  time.Duration
	placeLat, statusLat []time.Duration
	perMember           map[string]int
	usagePlaced, usage  localcluster.Usage
	// writes are the hub's writes by cluster ("hub" or "member"), split at the moment every
	// copy existed.
	writes map[string]benchutil.WriteCounts
}

func measure(ctx context.Context, cfg config, b *bench, copies *copyTracker) (result, error) {
	res := result{writes: map[string]benchutil.WriteCounts{}}
	if err := b.hub.CreateNamespace(ctx, benchNamespace); err != nil {
		return res, err
	}
	if err := localfleet.CreateGrant(ctx, b.hub.Client); err != nil {
		return res, err
	}
	one := int32(1)
	policy := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: "default"},
		Spec:       fleetv1alpha1.PlacementPolicySpec{Clusters: &one},
	}
	if err := b.hub.Client.Create(ctx, policy); err != nil {
		return res, fmt.Errorf("creating PlacementPolicy: %w", err)
	}
	for _, name := range b.names {
		if err := watchCopies(ctx, b.members[name], name, copies); err != nil {
			return res, err
		}
	}
	hubStatus := benchutil.NewReadiness(cfg.services)
	if err := watchHubReady(ctx, b.hub, hubStatus); err != nil {
		return res, err
	}
	start := time.Now()
	if err := createServices(ctx, cfg, b.hub.Client, copies.placed); err != nil {
		return res, err
	}
	if err := waitDone(ctx, b, copies.placed, cfg.timeout, "member copies"); err != nil {
		return res, err
	}
	var placedAt time.Time
	res.placeLat, placedAt = copies.placed.Latencies()
	res.placedIn = placedAt.Sub(start)
	res.perMember = copies.perMember()
	var err error
	if res.usagePlaced, err = b.hubProc.Usage(); err != nil {
		return res, err
	}
	// Let the placement's writes (status, bindings) finish, so the stream measures the status
	// path rather than a queue still busy with placing.
	if err = benchutil.WaitQuiet(ctx, b.hub.AuditLogPath(), cfg.settle); err != nil {
		return res, err
	}
	statusStart := time.Now()
	if err = streamReady(ctx, cfg, b, copies, hubStatus); err != nil {
		return res, err
	}
	if err = waitDone(ctx, b, hubStatus, cfg.timeout, "hub RayServices Ready"); err != nil {
		return res, err
	}
	var readyAt time.Time
	res.statusLat, readyAt = hubStatus.Latencies()
	res.statusIn = readyAt.Sub(statusStart)
	if err = benchutil.WaitQuiet(ctx, b.hub.AuditLogPath(), cfg.settle); err != nil {
		return res, err
	}
	if res.usage, err = b.hubProc.Usage(); err != nil {
		return res, err
	}
	return res, countWrites(b, placedAt, &res)
}

// countWrites tallies the hub's writes to the hub and, summed, to the members.
func countWrites(b *bench, placedAt time.Time, res *result) error {
	hub, err := benchutil.CountWrites(b.hub.AuditLogPath(), hubUser, benchutil.Window{}, placedAt)
	if err != nil {
		return err
	}
	res.writes["hub"] = hub
	var all []benchutil.WriteCounts
	for _, name := range b.names {
		wc, err := benchutil.CountWrites(b.members[name].AuditLogPath(), hubUser, benchutil.Window{}, placedAt)
		if err != nil {
			return fmt.Errorf("member %s: %w", name, err)
		}
		all = append(all, wc)
	}
	res.writes["member"] = sumCounts(all)
	return nil
}

// sumCounts adds write tallies together.
func sumCounts(all []benchutil.WriteCounts) benchutil.WriteCounts {
	out := benchutil.WriteCounts{ByKey: map[benchutil.WriteKey]int{}, Failures: map[string]int{}}
	for _, wc := range all {
		for k, v := range wc.ByKey {
			out.ByKey[k] += v
		}
		for k, v := range wc.Failures {
			out.Failures[k] += v
		}
		out.Total += wc.Total
		out.BeforeSplit += wc.BeforeSplit
		out.Status += wc.Status
		out.Conflicts += wc.Conflicts
		out.Failed += wc.Failed
	}
	return out
}

// waitDone waits until r is complete, failing early when bin/hub exits.
func waitDone(ctx context.Context, b *bench, r *benchutil.Readiness, timeout time.Duration, what string) error {
	select {
	case <-r.AllDone():
		return nil
	case <-b.hubProc.Done():
		return fmt.Errorf("bin/hub exited while waiting for %s (log %s)", what, b.hubProc.LogPath)
	case <-time.After(timeout):
		return fmt.Errorf("%s: only %d done after %v", what, r.ReadyCount(), timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// createServices creates the hub RayServices with cfg.parallel concurrent creates, recording
// each one's creation time just before its request is sent.
func createServices(ctx context.Context, cfg config, c client.Client, tracker *benchutil.Readiness) error {
	sem := make(chan struct{}, cfg.parallel)
	errs := make([]error, cfg.services)
	var wg sync.WaitGroup
	for i := range cfg.services {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			name := serviceName(i)
			rs := raybuilder.MakeRayService(name, benchNamespace).ReplicaBounds(0, 1, 1).Obj()
			rs.UID, rs.Generation = "", 0
			tracker.MarkCreated(name, time.Now())
			if err := c.Create(ctx, rs); err != nil {
				errs[i] = fmt.Errorf("creating RayService %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func serviceName(i int) string { return fmt.Sprintf("rs-%04d", i) }
