package main

// The rollout benchmark (-rollout) measures a fleet rollout end to end with the real agents:
// bin/hub on the hub, and on every member bin/spoke with kwok Nodes and a Ray dashboard
// stand-in, so that a member upgrade (a new RayCluster, its Pods Ready, the Serve config
// RUNNING, the switch) takes seconds. One RayService is placed on every member by a policy with
// a Rolling rollout; then, run after run, its Ray image changes and the benchmark times the
// change until the binding says Complete on the new revision, and counts the agents' writes
// from the API servers' audit logs: during the rollout (until the agents have been quiet for
// -settle after Complete) and in the -steady window that follows.

import (
	"context"
	"fmt"
	"os"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// rolloutService is the hub RayService the rollout benchmark updates.
const rolloutService = "svc"

// quietPoll is how often waitQuiet reads the audit logs; quietLimit bounds the wait.
const (
	quietPoll  = 250 * time.Millisecond
	quietLimit = time.Minute
)

// rolloutRun is one measured rollout.
type rolloutRun struct {
	// start is when the spec change was sent; quiet when the agents had been quiet for -settle
	// after Complete; steadyEnd ends the steady window that follows quiet.
	start, quiet, steadyEnd time.Time
	trace                   rolloutTrace
	// writes (start to quiet) and steady (quiet to steadyEnd) are the agents' writes by section.
	writes, steady map[string]benchutil.WriteCounts
}

// took is the time from the spec change to Complete.
func (r rolloutRun) took() time.Duration { return r.trace.completeAt.Sub(r.start) }

// rolloutResult is everything the rollout report shows.
type rolloutResult struct {
	// initial is the first placement, creation to Complete.
	initial time.Duration
	runs    []rolloutRun
	hub     localcluster.Usage
	// spokes sums the spokes' CPU; its PeakRSSBytes is the largest spoke's.
	spokes localcluster.Usage
}

func runRollout(ctx context.Context, cfg config) error {
	opts, err := rolloutControlPlaneOptions(cfg)
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
	if err = b.startHub(ctx, cfg); err != nil {
		return err
	}
	if err = b.startSpokes(ctx, cfg); err != nil {
		return err
	}
	if err = b.join(ctx); err != nil {
		return err
	}
	if err = b.waitMembersReady(ctx); err != nil {
		b.dumpLogs()
		return err
	}
	res, err := measureRollouts(ctx, cfg, b)
	if err != nil {
		b.dumpLogs()
		return err
	}
	printRolloutReport(os.Stdout, cfg, res)
	return nil
}

// dumpLogs writes the last lines of every cluster's logs (bin/hub and the spokes included).
func (b *bench) dumpLogs() {
	b.hub.DumpLogs(os.Stderr, 60)
	for _, name := range b.names {
		b.members[name].DumpLogs(os.Stderr, 60)
	}
}

// measureRollouts places the RayService, waits for its first rollout and for quiet, then
// measures cfg.rollout.runs rollouts one after the other.
func measureRollouts(ctx context.Context, cfg config, b *bench) (rolloutResult, error) {
	var res rolloutResult
	if err := createRolloutPolicy(ctx, cfg, b.hub); err != nil {
		return res, err
	}
	w := &rolloutWatch{}
	if err := watchBindings(ctx, b.hub, w); err != nil {
		return res, err
	}
	rs := newRolloutService()
	tr := w.begin("")
	start := time.Now()
	if err := b.hub.Client.Create(ctx, rs); err != nil {
		return res, fmt.Errorf("creating RayService %s/%s on the hub: %w", benchNamespace, rolloutService, err)
	}
	first, err := b.waitRollout(ctx, cfg, w, tr)
	if err != nil {
		return res, fmt.Errorf("first placement: %w", err)
	}
	res.initial = first.completeAt.Sub(start)
	if _, err = b.waitQuiet(ctx, first.completeAt, cfg.settle); err != nil {
		return res, err
	}
	image := rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image
	prev := first.target
	for i := range cfg.rollout.runs {
		run, runErr := b.rolloutOnce(ctx, cfg, w, prev, fmt.Sprintf("%s-run%d", image, i+1))
		if runErr != nil {
			return res, fmt.Errorf("run %d: %w", i+1, runErr)
		}
		fmt.Fprintf(os.Stderr, "bench: run %d: spec change -> Complete in %v\n", i+1, benchutil.Round(run.took()))
		res.runs = append(res.runs, run)
		prev = run.trace.target
	}
	for i := range res.runs {
		if err = b.countRun(&res.runs[i]); err != nil {
			return res, err
		}
	}
	if res.hub, err = b.hubProc.Usage(); err != nil {
		return res, err
	}
	for _, name := range b.names {
		u, usageErr := b.spokes[name].Usage()
		if usageErr != nil {
			return res, usageErr
		}
		res.spokes.CPU += u.CPU
		res.spokes.PeakRSSBytes = max(res.spokes.PeakRSSBytes, u.PeakRSSBytes)
	}
	return res, nil
}

// createRolloutPolicy creates benchNamespace and its "default" PlacementPolicy on the hub:
// every member, Rolling one cluster at a time with the configured soak.
func createRolloutPolicy(ctx context.Context, cfg config, hub *localcluster.Cluster) error {
	if err := hub.CreateNamespace(ctx, benchNamespace); err != nil {
		return err
	}
	if err := localfleet.CreateGrant(ctx, hub.Client); err != nil {
		return err
	}
	one := intstr.FromInt32(1)
	policy := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: "default"},
		Spec: fleetv1alpha1.PlacementPolicySpec{
			Clusters: ptr.To(int32(cfg.members)),
			Rollout: &fleetv1alpha1.RolloutStrategy{
				SoakSeconds:            ptr.To(int32(cfg.rollout.soakSeconds)),
				MaxUnavailableClusters: &one,
			},
		},
	}
	if err := hub.Client.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating PlacementPolicy %s/default: %w", benchNamespace, err)
	}
	return nil
}

// newRolloutService is the hub RayService: a head, one worker and the one-application Serve
// config.
func newRolloutService() *rayv1.RayService {
	rs := raybuilder.MakeRayService(rolloutService, benchNamespace).ReplicaBounds(0, 1, 1).Obj()
	rs.UID, rs.Generation = "", 0
	return rs
}

// rolloutOnce changes the hub RayService's Ray image (a change every member applies with a new
// RayCluster, as for an upgrade), waits for Complete, then for quiet, then through the steady
// window.
func (b *bench) rolloutOnce(ctx context.Context, cfg config, w *rolloutWatch, from, image string) (rolloutRun, error) {
	var run rolloutRun
	tr := w.begin(from)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs rayv1.RayService
		if err := b.hub.Client.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: rolloutService}, &rs); err != nil {
			return err
		}
		raybuilder.SetImage(&rs.Spec.RayClusterSpec, image)
		run.start = time.Now()
		return b.hub.Client.Update(ctx, &rs)
	})
	if err != nil {
		return run, fmt.Errorf("changing the image of RayService %s/%s on the hub: %w", benchNamespace, rolloutService, err)
	}
	if run.trace, err = b.waitRollout(ctx, cfg, w, tr); err != nil {
		return run, err
	}
	if run.quiet, err = b.waitQuiet(ctx, run.trace.completeAt, cfg.settle); err != nil {
		return run, err
	}
	run.steadyEnd = run.quiet.Add(cfg.rollout.steady)
	return run, b.sleepWatching(ctx, time.Until(run.steadyEnd))
}

// waitRollout waits until tr completes, failing when it stalls, times out or an agent exits.
func (b *bench) waitRollout(ctx context.Context, cfg config, w *rolloutWatch, tr *rolloutTrace) (rolloutTrace, error) {
	timeout := time.After(cfg.timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tr.done:
			got := w.snapshot(tr)
			if got.stalled != "" {
				return got, fmt.Errorf("rollout to %s stalled: %s", got.target, got.stalled)
			}
			return got, nil
		case <-tick.C:
			if err := b.exited(); err != nil {
				return rolloutTrace{}, err
			}
		case <-timeout:
			return rolloutTrace{}, fmt.Errorf("no Complete rollout after %v (target %q)", cfg.timeout, w.snapshot(tr).target)
		case <-ctx.Done():
			return rolloutTrace{}, ctx.Err()
		}
	}
}

// sleepWatching waits for d, failing early when an agent exits.
func (b *bench) sleepWatching(ctx context.Context, d time.Duration) error {
	end := time.After(d)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-end:
			return nil
		case <-tick.C:
			if err := b.exited(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitQuiet returns the first moment at least quiet after since at which neither agent has
// written anything but heartbeats for quiet, on any cluster. After quietLimit it gives up
// with a warning and returns the time, so that the figures still come out.
func (b *bench) waitQuiet(ctx context.Context, since time.Time, quiet time.Duration) (time.Time, error) {
	deadline := time.Now().Add(quietLimit)
	tick := time.NewTicker(quietPoll)
	defer tick.Stop()
	for {
		now := time.Now()
		if now.Sub(since) >= quiet {
			counts, err := b.countWindow(benchutil.Window{From: now.Add(-quiet), To: now})
			if err != nil {
				return now, err
			}
			busy := 0
			for _, wc := range counts {
				busy += rolloutTotal(wc)
			}
			if busy == 0 {
				return now, nil
			}
			if now.After(deadline) {
				fmt.Fprintf(os.Stderr, "bench: WARNING: the agents still write %v after Complete; counting from here\n", quietLimit)
				return now, nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return now, ctx.Err()
		}
	}
}

// countRun fills run's write counts from the audit logs.
func (b *bench) countRun(run *rolloutRun) error {
	var err error
	if run.writes, err = b.countWindow(benchutil.Window{From: run.start, To: run.quiet}); err != nil {
		return err
	}
	run.steady, err = b.countWindow(benchutil.Window{From: run.quiet, To: run.steadyEnd})
	return err
}

// countWindow tallies each write section's writes completed inside window.
func (b *bench) countWindow(window benchutil.Window) (map[string]benchutil.WriteCounts, error) {
	out := map[string]benchutil.WriteCounts{}
	for _, s := range writeSections {
		var paths []string
		if s.onHub {
			paths = []string{b.hub.AuditLogPath()}
		} else {
			for _, name := range b.names {
				paths = append(paths, b.members[name].AuditLogPath())
			}
		}
		all := make([]benchutil.WriteCounts, 0, len(paths))
		for _, p := range paths {
			wc, err := benchutil.CountWrites(p, s.user, window, time.Time{})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.title, err)
			}
			all = append(all, wc)
		}
		out[s.title] = sumCounts(all)
	}
	return out, nil
}
