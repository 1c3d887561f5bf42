//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// The flapping scenario's settings.
const (
	// flapDown and flapUp are how long ap's API server is stopped, then serving, in each cycle.
	flapDown = 20 * time.Second
	flapUp   = 20 * time.Second
	// flapHeartbeatTimeout is the hub's --heartbeat-timeout here. The default (40 s) and
	// Reachable's hysteresis (3 failed probes or 30 s) exist so that a 20 s outage does not
	// flip a member; to make each 20 s outage flip ap's Ready as the scenario asks, the hub
	// runs with 10 s, five report intervals of the spokes (2 s): the heartbeat ap's spoke
	// wrote last ages past it during the outage, and AgentReady turns False.
	flapHeartbeatTimeout = 10 * time.Second
	// flapToleration is the policy's failover.tolerationSeconds: longer than any one NotReady
	// spell of ap (the 20 s outage plus the hub's detection and recovery delays, which the
	// test measures and checks), far shorter than the whole flapping in the full run, so a hub
	// that counted ap's NotReady time across spells instead of from the last transition would
	// fail over mid-run.
	flapToleration = 90 * time.Second
	// flapGoroutineSlack is how many more goroutines the hub may run after the flapping than
	// before: the workers, informers and member clients are fixed in number, so the count
	// moves only with requests in flight and HTTP/2 connections being replaced (a few
	// goroutines each). A leak per outage of even one goroutine per informer of ap (five
	// kinds the hub watches there) exceeds it within the full run's seven outages.
	flapGoroutineSlack = 30
	// flapPeakRSS bounds the hub's peak RSS: e2e/bench/RESULTS.md measures 107 MiB at 1,000
	// RayServices on three members; 200 RayServices with a flapping member may not need five
	// times that.
	flapPeakRSS = 512 << 20
	// flapSettle bounds the waits for the fleet to settle, before and after.
	flapSettle = 10 * time.Minute
)

// Scenario 6: span(200, 50) small RayServices placed on two members each, spread by region, so
// that ap holds about two thirds of them; then ap's API server is stopped for 20 s and started
// for 20 s, again and again, for span(5m, 1m). The hub's failover toleration (90 s) is longer
// than any NotReady spell, so nothing may move: no RayService leaves ap, no failover is
// counted, no copy is deleted; and the hub must not grow: goroutines (from its pprof endpoint)
// after the fleet settled again are at most the count before plus a small slack, its peak RSS
// stays bounded, its CPU is reported.
func TestMemberFlapping(t *testing.T) {
	services := 200
	if !full() {
		services = 50
	}
	flapping := span(5*time.Minute, time.Minute)
	r := scenario(t, 6, "member flapping",
		fmt.Sprintf("%d RayServices on 2 of 3 members each (failover toleration %v); ap's API server stopped %v, started %v, repeatedly for %v (hub --heartbeat-timeout=%v so each outage flips ap's Ready)",
			services, flapToleration, flapDown, flapUp, flapping, flapHeartbeatTimeout),
		fmt.Sprintf("no RayService moved off ap, rayfleet_failovers_total unchanged, no copy deleted (ledger); hub goroutines after ≤ before + %d; hub peak RSS ≤ %d MiB",
			flapGoroutineSlack, flapPeakRSS>>20))
	pprofPort, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pprof := "http://127.0.0.1:" + strconv.Itoa(pprofPort)
	f := startFleet(t, func(o *localfleet.Options) {
		o.HubArgs = append(o.HubArgs, "--pprof-bind-address=127.0.0.1:"+strconv.Itoa(pprofPort))
		o.HeartbeatTimeout = flapHeartbeatTimeout
		// Debug logs of hundreds of RayServices would make the hub's CPU figure mostly logging.
		o.LogLevel = "info"
	})
	ctx := t.Context()
	const ns = "flapping"
	onAP := flapPlace(t, f, ns, services)
	before := flapMeasure(t, f, pprof)
	l := snapshot(ctx, t, f)
	moves := flapWatchMoves(t, f, ns, onAP)
	spells := flapWatchReady(t, f, memberAP)

	began := time.Now()
	stops, starts := flapRun(t, f, flapping)
	// Settled: ap Ready again and every RayService still placed on two members. Not that
	// every copy is Ready again: an outage longer than the node controller's grace period
	// (stop plus restart can exceed it on a loaded machine) makes ap's kube-controller-manager
	// mark ap's Pods NotReady, and kwok, unlike a kubelet, never marks a Running Pod Ready
	// again; the count of Ready hub RayServices is reported instead.
	eventually(t, flapSettle, func(g gomega.Gomega) { flapExpectPlaced(g, f, ns, services) })
	moves.stop()
	spells.stop()
	after := flapMeasure(t, f, pprof)

	g := gomega.NewWithT(t)
	transitions, longest, notReadyAt, readyAt := spells.result()
	detect, detected := flapLatency(stops, notReadyAt)
	recovery, recovered := flapLatency(starts, readyAt)
	g.Expect(transitions).To(gomega.BeNumerically(">", 0), "ap never turned NotReady in the hub's eyes: the flapping did not flap")
	g.Expect(longest).To(gomega.BeNumerically("<", flapToleration),
		"a NotReady spell of ap (%v) reached the failover toleration (%v): the scenario cannot tell a stampede from a due failover", longest, flapToleration)
	g.Expect(moves.moved()).To(gomega.BeEmpty(), "RayServices whose binding left ap while it flapped")
	g.Expect(after.failovers).To(gomega.Equal(before.failovers), "rayfleet_failovers_total")
	g.Expect(after.goroutines).To(gomega.BeNumerically("<=", before.goroutines+flapGoroutineSlack), "hub goroutines after the flapping")
	g.Expect(after.usage.PeakRSSBytes).To(gomega.BeNumerically("<=", flapPeakRSS), "hub peak RSS")
	apAfter := flapCopiesOn(t, f, ns, memberAP)
	g.Expect(apAfter).To(gomega.Equal(onAP), "RayServices on ap after the flapping")

	r.Add("outages of ap", len(stops))
	r.Add("NotReady transitions seen (hub)", transitions)
	r.Add("detect (stop → NotReady), longest", fmt.Sprintf("%v (%d of %d outages seen)", detect.Round(time.Millisecond), detected, len(stops)))
	r.Add("recover (serving again → Ready), longest", fmt.Sprintf("%v (%d of %d returns seen)", recovery.Round(time.Millisecond), recovered, len(starts)))
	r.Add("longest NotReady spell", longest)
	r.Add("RayServices on ap before / after", fmt.Sprintf("%d / %d", len(onAP), len(apAfter)))
	r.Add("copies moved", len(moves.moved()))
	r.Add("hub RayServices Ready after (see the test: kwok never re-readies Pods the node controller marked NotReady)",
		fmt.Sprintf("%d of %d", flapReady(g, f, ns), services))
	r.Add("rayfleet_failovers_total", after.failovers)
	r.Add("hub goroutines before / after", fmt.Sprintf("%d / %d", before.goroutines, after.goroutines))
	r.Add("hub peak RSS", fmt.Sprintf("%d MiB", after.usage.PeakRSSBytes>>20))
	r.Add("hub CPU during flapping and settling", (after.usage.CPU - before.usage.CPU).Round(10*time.Millisecond))
	r.Add("hub CPU in all", after.usage.CPU.Round(10*time.Millisecond))
	r.Add("flapping + settling", time.Since(began))
	l.count(ctx, t, f, r)
}

// flapPlace creates services small RayServices in ns under a policy placing each on two
// members spread by region, waits until all are placed and Ready, and returns the names of
// those on ap.
func flapPlace(t *testing.T, f *localfleet.Fleet, ns string, services int) []string {
	t.Helper()
	cCreateNamespace(t, f, ns)
	cCreatePolicy(t, f, ns, "two", fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](2), SpreadBy: regionKey, Failover: cTolerate(int64(flapToleration / time.Second)),
	})
	objs := make([]client.Object, services)
	for i := range objs {
		objs[i] = cSmallRayService(ns, fmt.Sprintf("svc-%03d", i), "two")
	}
	if _, err := cCreateAll(t.Context(), f, objs, 8); err != nil {
		t.Fatal(err)
	}
	eventually(t, flapSettle, func(g gomega.Gomega) { flapExpectSettled(g, f, ns, services) })
	onAP := flapCopiesOn(t, f, ns, memberAP)
	if len(onAP) == 0 {
		t.Fatalf("no RayService was placed on %s", memberAP)
	}
	return onAP
}

// flapExpectSettled checks that every member is Ready and every one of the services hub
// RayServices in ns is placed on two members and Ready.
func flapExpectSettled(g gomega.Gomega, f *localfleet.Fleet, ns string, services int) {
	flapExpectPlaced(g, f, ns, services)
	g.Expect(flapReady(g, f, ns)).To(gomega.Equal(services), "hub RayServices Ready")
}

// flapReady counts the hub RayServices in ns that are Ready.
func flapReady(g gomega.Gomega, f *localfleet.Fleet, ns string) int {
	var hub rayv1.RayServiceList
	g.Expect(f.Hub.Client.List(context.Background(), &hub, client.InNamespace(ns))).To(gomega.Succeed())
	ready := 0
	for i := range hub.Items {
		if cReady(&hub.Items[i]) {
			ready++
		}
	}
	return ready
}

// flapExpectPlaced checks that every member is Ready and every one of the services hub
// RayServices in ns is placed on two members.
func flapExpectPlaced(g gomega.Gomega, f *localfleet.Fleet, ns string, services int) {
	var mcs fleetv1alpha1.MemberClusterList
	g.Expect(f.Hub.Client.List(context.Background(), &mcs)).To(gomega.Succeed())
	for i := range mcs.Items {
		g.Expect(cMemberReady(&mcs.Items[i])).To(gomega.BeTrue(), "MemberCluster %s Ready", mcs.Items[i].Name)
	}
	var bindings fleetv1alpha1.RayServiceBindingList
	g.Expect(f.Hub.Client.List(context.Background(), &bindings, client.InNamespace(ns))).To(gomega.Succeed())
	g.Expect(bindings.Items).To(gomega.HaveLen(services), "bindings")
	for i := range bindings.Items {
		g.Expect(bindings.Items[i].Spec.Clusters).To(gomega.HaveLen(2), "clusters of %s", bindings.Items[i].Name)
	}
}

// flapCopiesOn lists the RayServices in ns whose binding names member, sorted.
func flapCopiesOn(t *testing.T, f *localfleet.Fleet, ns, member string) []string {
	t.Helper()
	var bindings fleetv1alpha1.RayServiceBindingList
	if err := f.Hub.Client.List(t.Context(), &bindings, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing bindings: %v", err)
	}
	var out []string
	for _, b := range bindings.Items {
		if slices.Contains(b.Spec.Clusters, member) {
			out = append(out, b.Name)
		}
	}
	slices.Sort(out)
	return out
}

// flapRun stops and starts ap's API server until d has passed, ending with it started, and
// returns when each outage began (stop) and ended (the API server serving again).
func flapRun(t *testing.T, f *localfleet.Fleet, d time.Duration) (stops, starts []time.Time) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		stops = append(stops, time.Now())
		if err := f.StopMemberAPIServer(memberAP); err != nil {
			t.Fatalf("stopping the API server of %s: %v", memberAP, err)
		}
		flapWait(t, flapDown)
		if err := f.StartMemberAPIServer(t.Context(), memberAP); err != nil {
			t.Fatalf("starting the API server of %s again: %v", memberAP, err)
		}
		starts = append(starts, time.Now())
		flapWait(t, flapUp)
	}
	return stops, starts
}

// flapLatency is the longest time from one of the instants at to the first of events after
// it (and before the next instant), and how many instants had such an event.
func flapLatency(at, events []time.Time) (longest time.Duration, matched int) {
	for i, a := range at {
		for _, e := range events {
			if e.Before(a) || (i+1 < len(at) && !e.Before(at[i+1])) {
				continue
			}
			longest = max(longest, e.Sub(a))
			matched++
			break
		}
	}
	return longest, matched
}

// flapWait waits d, or fails the test if it ends first.
func flapWait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-t.Context().Done():
		t.Fatal("the test ended while ap flapped")
	case <-time.After(d):
	}
}

// flapFigures is the hub as measured at one moment.
type flapFigures struct {
	goroutines int
	failovers  float64
	usage      localcluster.Usage
}

// flapMeasure reads the hub's goroutines (the least of a few samples over 10 s: the count
// moves with reconciles in flight, and the least is the resting count), its
// rayfleet_failovers_total and its resource usage.
func flapMeasure(t *testing.T, f *localfleet.Fleet, pprof string) flapFigures {
	t.Helper()
	var m flapFigures
	for i := range 5 {
		n, err := cGoroutines(t.Context(), pprof)
		if err != nil {
			t.Fatalf("reading the hub's goroutines: %v", err)
		}
		if i == 0 || n < m.goroutines {
			m.goroutines = n
		}
		flapWait(t, 2*time.Second)
	}
	var err error
	if m.failovers, err = cMetricSum(t.Context(), f.HubProcess.MetricsURL, "rayfleet_failovers_total"); err != nil {
		t.Fatalf("reading the hub's metrics: %v", err)
	}
	if m.usage, err = f.HubProcess.Usage(); err != nil {
		t.Fatalf("reading the hub's usage: %v", err)
	}
	return m
}

// flapMoves records the RayServices of a list whose binding, at any moment, did not name ap.
type flapMoves struct {
	stop func()
	mu   sync.Mutex
	onAP map[string]bool
	left map[string]bool
}

// flapWatchMoves watches the bindings in ns for those of onAP leaving ap.
func flapWatchMoves(t *testing.T, f *localfleet.Fleet, ns string, onAP []string) *flapMoves {
	t.Helper()
	w := &flapMoves{onAP: map[string]bool{}, left: map[string]bool{}}
	for _, n := range onAP {
		w.onAP[n] = true
	}
	w.stop = cWatch(t, "hub", f.Hub.Config, &fleetv1alpha1.RayServiceBindingList{}, ns, nil, func(ev cEvent) {
		b, ok := ev.Obj.(*fleetv1alpha1.RayServiceBinding)
		if !ok || !w.onAP[b.Name] {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if ev.Type == watch.Deleted || !slices.Contains(b.Spec.Clusters, memberAP) {
			w.left[b.Name] = true
		}
	})
	return w
}

// moved lists the RayServices that left ap, sorted.
func (w *flapMoves) moved() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.left))
	for n := range w.left {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// flapSpells records a MemberCluster's Ready transitions as the hub wrote them.
type flapSpells struct {
	stop        func()
	mu          sync.Mutex
	ready       *bool
	since       time.Time
	transitions int
	longest     time.Duration
	// notReadyAt and readyAt are when the watch saw Ready turn False, and True again.
	notReadyAt, readyAt []time.Time
}

// flapWatchReady watches the MemberCluster member's Ready condition.
func flapWatchReady(t *testing.T, f *localfleet.Fleet, member string) *flapSpells {
	t.Helper()
	s := &flapSpells{}
	byName := []client.ListOption{client.MatchingFields{"metadata.name": member}}
	s.stop = cWatch(t, "hub", f.Hub.Config, &fleetv1alpha1.MemberClusterList{}, "", byName, func(ev cEvent) {
		mc, ok := ev.Obj.(*fleetv1alpha1.MemberCluster)
		if !ok {
			return
		}
		ready := cMemberReady(mc)
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case s.ready != nil && *s.ready && !ready:
			s.transitions++
			s.since = ev.At
			s.notReadyAt = append(s.notReadyAt, ev.At)
		case s.ready != nil && !*s.ready && ready:
			s.readyAt = append(s.readyAt, ev.At)
			if !s.since.IsZero() {
				s.longest = max(s.longest, ev.At.Sub(s.since))
			}
		}
		s.ready = ptr.To(ready)
	})
	return s
}

// result is the count of Ready → NotReady transitions, the longest NotReady spell seen, and
// when Ready turned False and True.
func (s *flapSpells) result() (transitions int, longest time.Duration, notReadyAt, readyAt []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.transitions, s.longest, slices.Clone(s.notReadyAt), slices.Clone(s.readyAt)
}
