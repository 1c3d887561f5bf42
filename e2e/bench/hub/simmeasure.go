package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/hub/simmembers"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// hubController is the name of the hub RayService controller in the hub's metrics.
const hubController = "hub-rayservice"

// Phases of a scale run, the windows its API calls and reconciles are counted in.
const (
	phasePlace = iota
	phaseStatus
	phaseSteady
	numPhases
)

// rayServiceResources are the hub's resources of RayService work; the others (MemberClusters,
// Leases, ClusterReport probes) are written or read on a timer whatever the RayServices do.
var rayServiceResources = []string{
	"rayservices", "rayservices/status", "rayservicebindings", "rayservicebindings/status",
	"controllerrevisions", "namespaces", "events",
}

// simRun is what one run of the scale benchmark measured.
type simRun struct {
	// createdIn is how long the harness took to send every create; placedIn the first create
	// to the last copy; placeLat per RayService, create to its last copy.
	createdIn, placedIn time.Duration
	placeLat            []time.Duration
	fewest, most        int
	copies              int
	// statusLat per change, sent to shown on the hub; sentIn how long sending them took.
	statusLat        []time.Duration
	changes          int
	sentIn, statusIn time.Duration
	// usageFrom and usage are the hub process's at the start and the end of each phase;
	// cpFrom and cp the control planes' CPU (placement starts just before the first create).
	usageFrom, usage [numPhases]localcluster.Usage
	cpFrom, cp       [numPhases]cpUsage
	// windows are the phases' spans; reconciles and calls (by "hub" and "member") per phase.
	windows    [numPhases]benchutil.Window
	reconciles [numPhases]float64
	api        [numPhases]map[string]benchutil.WriteCounts
	// queueDepth is the hub RayService controller's queue at each phase's end; queueWait the
	// mean time its items waited in it during the phase.
	queueDepth, queueWait [numPhases]float64
	// phasesDone counts the phases that ended (numPhases unless the run failed).
	phasesDone int
	// floor is what the replay writer saw (-floor only).
	floor floorRun
	// heap is simhub's collections (not the floor's).
	heap heapTrace
}

// Names of the workqueue metrics the report reads.
const (
	queueDepthMetric = "workqueue_depth"
	queueWaitSum     = "workqueue_queue_duration_seconds_sum"
	queueWaitCount   = "workqueue_queue_duration_seconds_count"
	// activeWorkersMetric is controller-runtime's count of reconciles running, by controller.
	activeWorkersMetric = "controller_runtime_active_workers"
)

// measureSim runs the three phases on a fleet whose members are Ready.
func measureSim(ctx context.Context, cfg config, f *simFleet, prof *profiler) (simRun, error) {
	var run simRun
	if err := f.hub.CreateNamespace(ctx, benchNamespace); err != nil {
		return run, err
	}
	for _, p := range simPolicies {
		if err := f.hubClient.Create(ctx, p.object(benchNamespace)); err != nil {
			return run, fmt.Errorf("creating PlacementPolicy %s: %w", p.name, err)
		}
	}
	err := informAll(ctx, f.member, nil, func(rs *rayv1.RayService, deleted bool) {
		f.copies.observe(rs.Namespace, rs.Name, rs.Generation, deleted, time.Now())
	})
	if err != nil {
		return run, err
	}
	m := &simMeasure{cfg: cfg, f: f, run: &run, prof: prof}
	for i, phase := range []func(context.Context) error{m.place, m.status, m.steady} {
		if err := phase(ctx); err != nil {
			// The phases that ended are still worth counting: a long run that fails late has
			// its placement figures.
			run.phasesDone = i
			if i > 0 {
				err = errors.Join(err, m.count())
			}
			return run, err
		}
	}
	run.phasesDone = numPhases
	return run, m.count()
}

// simMeasure runs the phases of one run, each ending with endPhase.
type simMeasure struct {
	cfg  config
	f    *simFleet
	run  *simRun
	prof *profiler
	// reconFrom, waitFrom are the reconcile total and the queue-wait histogram's sum and count
	// at the current phase's start.
	reconFrom float64
	waitFrom  [2]float64
}

// reconciles scrapes the hub RayService controller's reconcile total.
func (m *simMeasure) reconciles(ctx context.Context) (float64, error) {
	t, err := benchutil.ReconcileTotals(ctx, m.f.hubProc.MetricsURL, hubController)
	if err != nil {
		return 0, err
	}
	return benchutil.Sum(t), nil
}

// beginPhase records the baselines phase's figures count from and returns its start: what
// happens between two phases (the harness preparing the next) is counted in neither.
func (m *simMeasure) beginPhase(ctx context.Context, phase int) (time.Time, error) {
	var err error
	if m.reconFrom, err = m.reconciles(ctx); err != nil {
		return time.Time{}, err
	}
	q, err := m.queue(ctx)
	if err != nil {
		return time.Time{}, err
	}
	m.waitFrom = [2]float64{q[queueWaitSum], q[queueWaitCount]}
	if m.run.cpFrom[phase], err = readControlPlanes(m.f.hub, m.f.member); err != nil {
		return time.Time{}, err
	}
	if m.run.usageFrom[phase], err = m.f.hubProc.Usage(); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// queue scrapes the hub RayService controller's workqueue figures.
func (m *simMeasure) queue(ctx context.Context) (map[string]float64, error) {
	return benchutil.Scrape(ctx, m.f.hubProc.MetricsURL, map[string]string{"name": hubController},
		queueDepthMetric, queueWaitSum, queueWaitCount)
}

// endPhase records the phase's window (from start to now), reconciles and the hub's usage.
func (m *simMeasure) endPhase(ctx context.Context, phase int, start time.Time) error {
	m.run.windows[phase] = benchutil.Window{From: start, To: time.Now()}
	total, err := m.reconciles(ctx)
	if err != nil {
		return err
	}
	m.run.reconciles[phase] = total - m.reconFrom
	q, err := m.queue(ctx)
	if err != nil {
		return err
	}
	m.run.queueDepth[phase] = q[queueDepthMetric]
	if n := q[queueWaitCount] - m.waitFrom[1]; n > 0 {
		m.run.queueWait[phase] = (q[queueWaitSum] - m.waitFrom[0]) / n
	}
	if m.run.cp[phase], err = readControlPlanes(m.f.hub, m.f.member); err != nil {
		return err
	}
	m.run.usage[phase], err = m.f.hubProc.Usage()
	return err
}

// quiet waits until the hub's RayService queue is empty with no reconcile running and the hub
// has not touched RayService work on the hub or the member for -settle, as the audit logs
// tell. The audit logs alone are not enough: a reconcile that writes nothing (a copy turning
// Running changes no hub status) leaves no trace there, and a backlog of 10,000 of them would
// spill into the next phase, its queue wait and its reconciles per change. The audit logs are
// waited on first: reading them costs the hub nothing, while every scrape of its metrics
// renders all its series (three per RayService) on the hub's CPU.
func (m *simMeasure) quiet(ctx context.Context) error {
	for {
		err := benchutil.WaitQuietFor(ctx, []string{m.f.hub.AuditLogPath(), m.f.member.AuditLogPath()}, hubUser,
			rayServiceResources, m.cfg.settle, m.cfg.timeout)
		if err != nil {
			return err
		}
		if idle, err := m.idle(ctx); err != nil || idle {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, idlePoll, m.cfg.timeout, true, m.idle)
		if err != nil {
			return fmt.Errorf("waiting for the hub's RayService queue to drain: %w", err)
		}
	}
}

// idlePoll is how often quiet scrapes the hub while its queue drains.
const idlePoll = 2 * time.Second

// idle reports whether the hub RayService controller has nothing queued and no reconcile
// running (items waiting out a RequeueAfter are not queued yet).
func (m *simMeasure) idle(ctx context.Context) (bool, error) {
	q, err := m.queue(ctx)
	if err != nil {
		return false, err
	}
	w, err := benchutil.Scrape(ctx, m.f.hubProc.MetricsURL, map[string]string{"controller": hubController}, activeWorkersMetric)
	if err != nil {
		return false, err
	}
	return q[queueDepthMetric] == 0 && w[activeWorkersMetric] == 0, nil
}

// place creates the RayServices and waits for every copy their policies ask for, then for
// quiet.
func (m *simMeasure) place(ctx context.Context) error {
	m.prof.cpu(ctx, "place", profilePlace)
	start, err := m.beginPhase(ctx, phasePlace)
	if err != nil {
		return err
	}
	if err = createSimServices(ctx, m.cfg, m.f.hubClient, m.f.copies.placed, nil); err != nil {
		return err
	}
	m.run.createdIn = time.Since(start)
	if err := m.waitDone(ctx, m.f.copies.placed.AllDone(), m.f.copies.placed.ReadyCount, "member copies"); err != nil {
		return err
	}
	var placedAt time.Time
	m.run.placeLat, placedAt = m.f.copies.placed.Latencies()
	m.run.placedIn = placedAt.Sub(start)
	m.run.fewest, m.run.most, m.run.copies = m.f.copies.spread()
	m.prof.heap(ctx, "place")
	u, _ := m.f.hubProc.Usage()
	fmt.Fprintf(os.Stderr, "bench: placed %d copies in %v (creates sent in %v; per RayService p50 %v, p99 %v); hub peak RSS %.0f MiB, CPU %.1f s\n",
		m.run.copies, benchutil.Round(m.run.placedIn), benchutil.Round(m.run.createdIn),
		benchutil.Round(benchutil.Percentile(m.run.placeLat, 0.5)), benchutil.Round(benchutil.Percentile(m.run.placeLat, 0.99)),
		float64(u.PeakRSSBytes)/(1<<20), u.CPU.Seconds())
	if err := m.quiet(ctx); err != nil {
		return err
	}
	return m.endPhase(ctx, phasePlace, start)
}

// status turns the copies Ready at -status-rate and waits until the hub shows every change,
// then for quiet.
func (m *simMeasure) status(ctx context.Context) error {
	all := m.f.copies.changes(m.cfg.services, 0)
	changes, rest := all, []simChange(nil)
	if n := m.cfg.sim.statusChanges; n > 0 && n < len(all) {
		changes, rest = all[:n], all[n:]
	}
	m.run.changes = len(changes)
	eps := newEndpoints(len(changes))
	err := informAll(ctx, m.f.hub, map[string]cache.Config{benchNamespace: {}}, func(rs *rayv1.RayService, deleted bool) {
		if !deleted {
			eps.observe(rs.Name, int(rs.Status.NumServeEndpoints), time.Now())
		}
	})
	if err != nil {
		return err
	}
	// As a spoke would once each copy's RayCluster runs, and before the timed changes, so that
	// the stream measures the status path alone.
	if err = markAllRunning(ctx, m.f.memberClient, all); err != nil {
		return err
	}
	if err = m.quiet(ctx); err != nil {
		return err
	}
	m.prof.cpu(ctx, "status", profileStatus)
	start, err := m.beginPhase(ctx, phaseStatus)
	if err != nil {
		return err
	}
	lastSent, err := streamSim(ctx, m.cfg.sim.statusRate, m.f.memberClient, changes, eps)
	if err != nil {
		return err
	}
	m.run.sentIn = lastSent.Sub(start)
	if err = m.waitDone(ctx, eps.done, eps.count, "member status changes on the hub"); err != nil {
		return err
	}
	m.run.statusIn = time.Since(start)
	m.run.statusLat = eps.latencies()
	fmt.Fprintf(os.Stderr, "bench: %d status changes sent in %v, all on the hub in %v (p50 %v, p99 %v)\n",
		m.run.changes, benchutil.Round(m.run.sentIn), benchutil.Round(m.run.statusIn),
		benchutil.Round(benchutil.Percentile(m.run.statusLat, 0.5)), benchutil.Round(benchutil.Percentile(m.run.statusLat, 0.99)))
	if err = m.quiet(ctx); err != nil {
		return err
	}
	if err = m.endPhase(ctx, phaseStatus, start); err != nil {
		return err
	}
	// The copies left out of the timed stream turn Ready too, outside the phase's window (the
	// writes per change count the timed changes alone), so that every rollout completes and
	// the steady state starts settled.
	if len(rest) == 0 {
		return nil
	}
	if err = markAllReady(ctx, m.f.memberClient, rest); err != nil {
		return err
	}
	return m.quiet(ctx)
}

// steady leaves the fleet alone for -steady, heartbeats going on.
func (m *simMeasure) steady(ctx context.Context) error {
	m.prof.cpu(ctx, "steady", min(profileSteady, m.cfg.rollout.steady))
	start, err := m.beginPhase(ctx, phaseSteady)
	if err != nil {
		return err
	}
	select {
	case <-time.After(m.cfg.rollout.steady):
	case <-m.f.hubProc.Done():
		return fmt.Errorf("simhub exited during the steady state (log %s)", m.f.hubProc.LogPath)
	case <-ctx.Done():
		return ctx.Err()
	}
	return m.endPhase(ctx, phaseSteady, start)
}

// waitDone waits for done, failing early when simhub exits or after -timeout.
func (m *simMeasure) waitDone(ctx context.Context, done <-chan struct{}, count func() int, what string) error {
	select {
	case <-done:
		return nil
	case <-m.f.hubProc.Done():
		return fmt.Errorf("simhub exited while waiting for %s (log %s)", what, m.f.hubProc.LogPath)
	case <-time.After(m.cfg.timeout):
		return fmt.Errorf("%s: only %d done after %v", what, count(), m.cfg.timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// count tallies the hub's API calls on the hub and the member in each phase's window.
func (m *simMeasure) count() error {
	windows := m.run.windows[:]
	// A phase that did not end counts nothing (an empty window, not an open one).
	never := time.Unix(1, 0)
	for i := m.run.phasesDone; i < numPhases; i++ {
		windows[i] = benchutil.Window{From: never, To: never}
	}
	for i := range m.run.api {
		m.run.api[i] = map[string]benchutil.WriteCounts{}
	}
	for _, where := range []struct {
		name string
		c    *localcluster.Cluster
	}{{"hub", m.f.hub}, {"member", m.f.member}} {
		counts, err := benchutil.CountWritesIn(where.c.AuditLogPath(), hubUser, windows)
		if err != nil {
			return fmt.Errorf("audit log of the %s: %w", where.name, err)
		}
		for i := range counts {
			m.run.api[i][where.name] = counts[i]
		}
	}
	return nil
}

// createSimServices creates the scale benchmark's RayServices, cfg.parallel at a time,
// recording each one's creation time just before its request is sent; created, when set, is
// handed RayService i as the create answered it (the floor's replay starts from it).
func createSimServices(ctx context.Context, cfg config, c client.Client, placed *benchutil.Readiness,
	created func(i int, rs *rayv1.RayService)) error {
	sem := make(chan struct{}, cfg.parallel)
	errs := make([]error, cfg.services)
	var wg sync.WaitGroup
	for i := range cfg.services {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rs := simRayService(i)
			placed.MarkCreated(rs.Name, time.Now())
			if err := c.Create(ctx, rs); err != nil {
				errs[i] = fmt.Errorf("creating RayService %s: %w", rs.Name, err)
			} else if created != nil {
				created(i, rs)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// streamSim sends the changes at rate per second, each in its own goroutine so that a slow
// write does not delay the next one's send time (the pace, not the hub, would then set the
// figures); a change turns the copy Ready with one serve endpoint, as a spoke would report it.
// It returns when every write has been answered, with the time the last one was sent.
func streamSim(ctx context.Context, rate float64, c client.Client, changes []simChange, eps *endpoints) (time.Time, error) {
	interval := time.Duration(float64(time.Second) / rate)
	errs := make(chan error, 1)
	inFlight := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	lastSent := start
	for i, ch := range changes {
		// Paced against the start rather than a ticker, which drops ticks when the harness is
		// late: the rate asked is the rate sent.
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-ctx.Done():
				return lastSent, ctx.Err()
			case err := <-errs:
				return lastSent, err
			case <-time.After(d):
			}
		}
		select {
		case inFlight <- struct{}{}:
		case <-ctx.Done():
			return lastSent, ctx.Err()
		}
		lastSent = time.Now()
		wg.Go(func() {
			defer func() { <-inFlight }()
			if err := markSimReady(ctx, c, ch, eps); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return lastSent, err
	default:
		return lastSent, nil
	}
}

// statusRetry retries a status change the member API server did not answer in time (a
// loaded server times out; a spoke would retry too): the change's latency includes the retries.
var statusRetry = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 8}

// maxInFlight bounds the status changes waiting for an answer: beyond HTTP/2's streams per
// connection the client opens more connections, whose TLS handshakes time out on a starved
// machine. When the member API server is that slow, the rate sent drops (the report says so).
const maxInFlight = 200

// markSimReady patches the copy's status Ready for its generation, in one request (retried
// when the server times out or is unavailable), recording the time just before the first.
func markSimReady(ctx context.Context, c client.Client, ch simChange, eps *endpoints) error {
	// A map rather than rayv1.RayServiceStatuses, whose empty fields would be in the patch.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"observedGeneration":  ch.generation,
		"numServeEndpoints":   1,
		"serviceStatus":       rayv1.Running,
		"activeServiceStatus": map[string]any{"rayClusterName": ch.name + "-abcde"},
		"conditions": []metav1.Condition{{
			Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: "NonZeroServeEndpoints",
			ObservedGeneration: ch.generation, LastTransitionTime: metav1.Now(),
		}},
	}})
	if err != nil {
		return err
	}
	rs := &rayv1.RayService{}
	rs.Namespace, rs.Name = simmembers.BackingNamespace(ch.member, benchNamespace), ch.name
	eps.changed(ch.name, time.Now())
	err = retry.OnError(statusRetry, retriable, func() error {
		return c.Status().Patch(ctx, rs, client.RawPatch(types.MergePatchType, patch))
	})
	if err != nil {
		return fmt.Errorf("writing status of %s's copy on %s: %w", ch.name, ch.member, err)
	}
	return nil
}

// markAllRunning marks every copy of changes running (markSimRunning), maxInFlight at once.
func markAllRunning(ctx context.Context, c client.Client, changes []simChange) error {
	sem := make(chan struct{}, maxInFlight)
	errs := make([]error, len(changes))
	var wg sync.WaitGroup
	for i, ch := range changes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = markSimRunning(ctx, c, ch)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// markAllReady turns the copies of changes Ready, maxInFlight at a time, untimed.
func markAllReady(ctx context.Context, c client.Client, changes []simChange) error {
	untimed := newEndpoints(len(changes))
	sem := make(chan struct{}, maxInFlight)
	errs := make([]error, len(changes))
	var wg sync.WaitGroup
	for i, ch := range changes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = markSimReady(ctx, c, ch, untimed)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// markSimRunning writes the spoke's running-cluster-hash and running-serve-config-hash
// annotations on the copy, computed from the copy's own spec as the spoke computes them from its
// active RayCluster: once the copy is Ready too, the hub's rollout of the RayService completes
// and it settles, as under real spokes.
func markSimRunning(ctx context.Context, c client.Client, ch simChange) error {
	key := client.ObjectKey{Namespace: simmembers.BackingNamespace(ch.member, benchNamespace), Name: ch.name}
	var cp rayv1.RayService
	err := retry.OnError(statusRetry, retriable, func() error { return c.Get(ctx, key, &cp) })
	if err != nil {
		return fmt.Errorf("reading %s's copy on %s: %w", ch.name, ch.member, err)
	}
	clusterHash, err := rayspec.ClusterSpecHash(&cp.Spec.RayClusterSpec)
	if err != nil {
		return fmt.Errorf("hashing %s's copy on %s: %w", ch.name, ch.member, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		labels.RunningClusterHash:     clusterHash,
		labels.RunningServeConfigHash: rayspec.ServeConfigHash(cp.Spec.ServeConfigV2),
	}}})
	if err != nil {
		return err
	}
	err = retry.OnError(statusRetry, retriable, func() error {
		return c.Patch(ctx, &cp, client.RawPatch(types.MergePatchType, patch))
	})
	if err != nil {
		return fmt.Errorf("annotating %s's copy on %s: %w", ch.name, ch.member, err)
	}
	return nil
}

// retriable are the answers of an overloaded API server, and failures to reach it at all.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}
