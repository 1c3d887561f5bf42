package main

// The status floor (-sim -floor -status-floor): after the floor's placement replay, the
// highest rate of member status changes the control planes show on the hub with p99 under 1 s
// when the hub costs nothing. The harness turns copies Ready as in -sim's status phase
// (markSimReady: one status patch of the copy, the first copy of every RayService before any
// second copy); the floor's writer sees each change through a watch of the copies, as the
// hub's member informer would (not from the patch's answer: the watch's delivery is part of
// the hub's path too), and writes what the hub writes to show it (floor/status.go: the binding
// and hub RayService status patches at once, the rollout's events) with the hub's 16 workers
// and its identity. A change is shown when the hub RayService's numServeEndpoints counts it,
// as the endpoints tracker measures the hub. The search (simstatussearch.go) sends a fixed
// number of fresh changes per step at rising rates; each step ends once every change it sent
// is shown and the writer is idle, so no backlog spills into the next.
//
// Left out: the harness's running-hash annotations on the copies (-sim writes them before its
// timed stream, for the hub's "done"; the floor's "done" reads the Ready condition alone), and
// everything floor/status.go leaves out of the hub.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/hub/floor"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// statusFloorConfig is -status-floor's part of the command line.
type statusFloorConfig struct {
	enabled bool
	// changes is how many changes each step sends; 0 lets statusStepSize choose.
	changes int
}

func (c *statusFloorConfig) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.enabled, "status-floor", false,
		"with -sim -floor (implied): after the placement replay, find the highest member status change rate the floor shows on the hub with p99 < 1 s")
	fs.IntVar(&c.changes, "status-floor-changes", 0,
		"-status-floor: changes each step of the rate search sends; 0: 1,000, fewer when the copies do not last the ladder")
}

// statusFloor is the rate search's outcome.
type statusFloor struct {
	steps []statusStep
	// sustainable is the highest rate that passed (0: none); stopped says why the search ended.
	sustainable float64
	stopped     string
	// stepSize is the changes each step sent at most; copies the copies there were to change.
	stepSize, copies int
}

// statusPoll is how often a step checks its changes shown and the writer idle.
const statusPoll = 50 * time.Millisecond

// measureStatusFloor runs the status floor's rate search on a fleet whose placement w replayed:
// it starts w's status writer and the watches it and the benchmark read, and runs steps until
// nextStatusRate ends the search.
func measureStatusFloor(ctx context.Context, cfg config, f *simFleet, w *floor.Writer) (statusFloor, error) {
	all := f.copies.changes(cfg.services, 0)
	res := statusFloor{copies: len(all), stepSize: statusStepSize(cfg.sim.statusFloor.changes, len(all), len(statusLadder))}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Every policy of the workload has the same rollout (no soak).
	stopped, err := w.StartStatus(ctx, simPolicies[0].object(benchNamespace).Spec.Rollout, floor.DefaultWorkers)
	if err != nil {
		return res, err
	}
	defer func() {
		cancel()
		stopped()
	}()
	err = informAll(ctx, f.member, nil, func(rs *rayv1.RayService, deleted bool) {
		if !deleted {
			w.ObserveCopy(rs)
		}
	})
	if err != nil {
		return res, err
	}
	eps := newEndpoints(len(all))
	err = informAll(ctx, f.hub, map[string]cache.Config{benchNamespace: {}}, func(rs *rayv1.RayService, deleted bool) {
		if !deleted {
			eps.observe(rs.Name, int(rs.Status.NumServeEndpoints), time.Now())
		}
	})
	if err != nil {
		return res, err
	}
	next := 0
	for {
		rate, why := nextStatusRate(statusLadder, res.steps, len(all)-next, res.stepSize)
		if rate == 0 {
			res.stopped = why
			break
		}
		step, err := runStatusStep(ctx, cfg, f, w, eps, all[next:next+res.stepSize], rate)
		if err != nil {
			return res, fmt.Errorf("status floor at %.0f/s: %w", rate, err)
		}
		next += step.changes
		res.steps = append(res.steps, step)
		fmt.Fprintf(os.Stderr, "bench: status floor at %.0f/s: %d changes sent at %.0f/s, p50 %v, p99 %v, pass %t\n",
			rate, step.changes, step.sent, benchutil.Round(step.p50), benchutil.Round(step.p99), step.passes())
	}
	res.sustainable = sustainableRate(res.steps)
	return res, countStatusWrites(f, res.steps)
}

// countStatusWrites sets each step's writes of RayService work per change, by the hub's
// identity on the hub and the member, from the audit logs.
func countStatusWrites(f *simFleet, steps []statusStep) error {
	windows := make([]benchutil.Window, len(steps))
	for i := range steps {
		windows[i] = steps[i].window
	}
	for _, c := range []*localcluster.Cluster{f.hub, f.member} {
		counts, err := benchutil.CountWritesIn(c.AuditLogPath(), hubUser, windows)
		if err != nil {
			return fmt.Errorf("audit log of %s: %w", c.Name, err)
		}
		for i := range steps {
			n := 0
			for k, v := range counts[i].ByKey {
				if slices.Contains(rayServiceResources, k.Resource) && benchutil.IsWrite(k.Verb) {
					n += v
				}
			}
			steps[i].writesPerChange += float64(n) / float64(max(steps[i].changes, 1))
		}
	}
	return nil
}

// runStatusStep sends changes at rate, stopping early once the step is clearly over the
// target, waits until every change sent is shown and the writer is idle, and measures.
func runStatusStep(ctx context.Context, cfg config, f *simFleet, w *floor.Writer, eps *endpoints,
	changes []simChange, rate float64) (statusStep, error) {
	step := statusStep{asked: rate, window: benchutil.Window{From: time.Now()}}
	from := eps.count()
	cpFrom, err := readControlPlanes(f.hub, f.member)
	if err != nil {
		return step, err
	}
	calls, failures, eventsFailed := w.Calls(), w.StatusFailures(), w.EventsFailed()
	sent := &sendLog{}
	stop := make(chan struct{})
	watchCtx, stopWatching := context.WithCancel(ctx)
	go func() {
		// Stops the stream once the step's p99 is known to be over the target.
		_ = wait.PollUntilContextCancel(watchCtx, statusPoll, false, func(context.Context) (bool, error) {
			lat := eps.since(from)
			late := 0
			for _, d := range lat {
				if d >= simTargetStatusP99 {
					late++
				}
			}
			if clearlyOver(lateAtLeast(sent.times(), len(lat), late, time.Now()), len(changes)) {
				close(stop)
				return true, nil
			}
			return false, nil
		})
	}()
	n, span, err := streamUntil(ctx, rate, f.memberClient, changes, eps, sent, stop)
	stopWatching()
	if err != nil {
		return step, err
	}
	step.changes = n
	step.endedEarly = n < len(changes)
	step.sent = rate
	if n > 1 && span > 0 {
		step.sent = float64(n-1) / span.Seconds()
	}
	shown := func(context.Context) (bool, error) { return eps.count()-from >= n && w.StatusIdle(), nil }
	if err = wait.PollUntilContextTimeout(ctx, statusPoll, cfg.timeout, true, shown); err != nil {
		return step, fmt.Errorf("%d of %d changes shown after %v: %w", eps.count()-from, n, cfg.timeout, err)
	}
	step.window.To = time.Now()
	cpTo, err := readControlPlanes(f.hub, f.member)
	if err != nil {
		return step, err
	}
	lat := eps.since(from)
	benchutil.SortDurations(lat)
	step.p50, step.p99 = benchutil.Percentile(lat, 0.5), benchutil.Percentile(lat, 0.99)
	per := time.Duration(max(n, 1))
	step.cpuPerChange = cpTo.sub(cpFrom).total() / per
	step.callsPerChange = float64(w.Calls()-calls) / float64(max(n, 1))
	step.failures, step.eventsFailed = w.StatusFailures()-failures, w.EventsFailed()-eventsFailed
	return step, nil
}

// sendLog records when each change of a step was sent, in order.
type sendLog struct {
	mu sync.Mutex
	at []time.Time
}

func (l *sendLog) add(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, t)
}

func (l *sendLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at)
}

// streamUntil sends changes at rate as streamSim does, until they are all sent or stop is
// closed; it returns once every write sent has been answered, with how many were sent and the
// span from the first send to the last.
func streamUntil(ctx context.Context, rate float64, c client.Client, changes []simChange, eps *endpoints,
	sent *sendLog, stop <-chan struct{}) (int, time.Duration, error) {
	interval := time.Duration(float64(time.Second) / rate)
	errs := make(chan error, 1)
	inFlight := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	var last time.Time
	n := 0
	for i, ch := range changes {
		// Paced against the start, as streamSim: the rate asked is the rate sent unless the
		// member API server holds maxInFlight changes unanswered.
		var due <-chan time.Time
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			due = time.After(d)
		} else {
			now := make(chan time.Time, 1)
			now <- start
			due = now
		}
		select {
		case <-ctx.Done():
			return n, last.Sub(start), ctx.Err()
		case err := <-errs:
			return n, last.Sub(start), err
		case <-stop:
			return n, last.Sub(start), nil
		case <-due:
		}
		select {
		case inFlight <- struct{}{}:
		case <-stop:
			return n, last.Sub(start), nil
		case <-ctx.Done():
			return n, last.Sub(start), ctx.Err()
		}
		last = time.Now()
		sent.add(last)
		n++
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
		return n, last.Sub(start), err
	default:
		return n, last.Sub(start), nil
	}
}

// since is the latencies of the changes shown since the i-th, in the order they were shown.
func (e *endpoints) since(i int) []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.lat[min(i, len(e.lat)):])
}

// printStatusFloor prints the search's steps and the floor's sustainable status rate.
func printStatusFloor(out io.Writer, sf statusFloor) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "Status floor: member status change -> hub status with no hub, the hub's status writes replayed by %d workers; "+
		"%d changes a step at most, of %d copies\n", floor.DefaultWorkers, sf.stepSize, sf.copies)
	fmt.Fprintln(w, "rate asked (/s)\tsent (/s)\tchanges\tp50 (ms)\tp99 (ms)\tcontrol-plane CPU per change (ms)\t"+
		"writer requests per change\thub writes per change (audit)\trefused writes / events\tpasses")
	for _, s := range sf.steps {
		verdict := fmt.Sprint(s.passes())
		if s.endedEarly {
			verdict += " (ended early: p99 over)"
		}
		fmt.Fprintf(w, "%.0f\t%.0f\t%d\t%.0f\t%.0f\t%.1f\t%.2f\t%.2f\t%d / %d\t%s\n", s.asked, s.sent, s.changes,
			ms(s.p50), ms(s.p99), ms(s.cpuPerChange), s.callsPerChange, s.writesPerChange, s.failures, s.eventsFailed, verdict)
	}
	// The summary is printed below the table, so that its long labels do not widen the rates.
	_ = w.Flush()
	if sf.sustainable > 0 {
		fmt.Fprintf(out, "floor: highest status-change rate with p99 < 1 s (sent >= %.0f %% of asked): %.0f/s\n", 100*minSentShare, sf.sustainable)
	} else {
		fmt.Fprintln(out, "floor: highest status-change rate with p99 < 1 s: none of the rates tried")
	}
	fmt.Fprintf(out, "search ended: %s\n", sf.stopped)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
