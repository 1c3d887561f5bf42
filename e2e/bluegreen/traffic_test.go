//go:build e2e

package bluegreen

import (
	"context"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/chaos"

	"github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// trafficTuning is TestBlueGreenTraffic's rollout: quarter steps, quick intervals and hold.
var trafficTuning = blueGreen{stepPercent: 25, intervalSeconds: 10, retireAfterSeconds: 20}

// drainDelay is how long the hub keeps a copy that leaves after the gateway accepted a route
// without it (hub/fleet's drain).
const drainDelay = 15 * time.Second

// firstRevisionSoak is TestBlueGreenTraffic's soak: its first change comes long before it ends
// (and it stays under the default progress deadline, 10 min, as the API requires).
const firstRevisionSoak = 5 * time.Minute

// Slack of the times the hub keeps in whole seconds (a traffic-off time is truncated).
const wholeSecondSlack = time.Second

// undoWithin bounds how long after `rayfleet rollout undo` the gateway may accept a route
// giving blue everything: one reconcile of the spec change and the gateway's pickup.
const undoWithin = 10 * time.Second

// memberTransitionTimeout bounds how long the hub takes to see a member's API server go away
// (a failed probe once the heartbeat it read is heartbeatTimeout old) or come back, on a
// loaded machine.
const memberTransitionTimeout = 2 * time.Minute

// trafficRun is TestBlueGreenTraffic's state: the RayService, its route and the requests.
type trafficRun struct {
	t        *testing.T
	ns, name string
	routes   *routeRecorder
	req      *requester
	blue     string
	// revs are the revisions in the order they appeared: the first, the one undone, the one
	// rolled out.
	revs []string
}

// TestBlueGreenTraffic rolls a RayService out blue/green through the fleet's Gateway while a
// client sends requests through it: blue keeps everything while green deploys, green's share
// follows the route's weights step by step, green's API server down pauses the shift with
// green keeping its share, an undo sends everything back to blue at once and green is removed
// after the drain, and a second change goes all the way to green, blue retired, pausing the
// same way while green is partitioned from the hub (chaos row 8 with a shift in flight). Not one request may
// fail. The first change comes while the first revision still soaks (it serves, it is not good
// yet): it goes to green all the same, never in place onto blue.
func TestBlueGreenTraffic(t *testing.T) {
	const ns, name = "bg-traffic", "berry"
	waitMembersReady(t)
	spec := policySpec(trafficTuning, true)
	// Far longer than the test takes to make its first change: the first revision is never good.
	spec.Rollout.SoakSeconds = ptr.To(int32(firstRevisionSoak / time.Second))
	setUp(t, ns, name, spec)
	x := &trafficRun{t: t, ns: ns, name: name, routes: recordRoute(t, ns, name)}

	t.Log("the first revision goes to one member (blue), which the route gives everything")
	blue, rev1 := servesFirst(t, ns, name)
	x.blue, x.revs = blue, []string{rev1}
	firstServed(t, x.routes, blue, rev1)
	x.req = startRequests(t, gatewayURL())
	started := time.Now()
	expectOnly(t, "before any change", waitAnswers(t, x.req, started, 50), blue, rev1)

	expectNotGood(t, ns, name, rev1)
	change1 := newVersion(t, ns, name, "2")
	green1 := x.deploysGreen(change1)
	t.Logf("green %s deploys revision %s; blue %s keeps revision %s", green1, x.revs[1], blue, rev1)

	at25 := waitAccepted(t, x.routes, weightsFor(blue, green1, 25), change1, stepTimeout)
	t.Logf("%s: green %s at 25%% accepted", at25.Format("15:04:05.000"), green1)
	resumed, back := x.greenDown(green1, apiServerDown)
	if resumed >= 100 {
		t.Fatalf("green took everything at once after it was back; nothing left to undo mid-shift")
	}
	atResumed := waitAccepted(t, x.routes, weightsFor(blue, green1, resumed), back, stepTimeout)
	// Some answers at that share before the undo, well within the interval to the next step.
	waitAnswers(t, x.req, waitApplied(t, x.routes, weightsFor(blue, green1, resumed), atResumed), 100)
	x.undo(green1)

	change2 := newVersion(t, ns, name, "3")
	green2 := x.deploysGreen(change2)
	t.Logf("green %s deploys revision %s; blue %s keeps revision %s", green2, x.revs[2], blue, rev1)
	// Chaos row 8 with a shift in flight: green partitioned from the hub, serving all along.
	x.steps(green2, change2, 25)
	resumed2, healed := x.greenDown(green2, partitioned)
	for p := resumed2 + trafficTuning.stepPercent; p < 100; p += trafficTuning.stepPercent {
		x.steps(green2, healed, p)
	}
	full := waitAccepted(t, x.routes, weightsFor(blue, green2, 100), change2, stepTimeout)
	toFull := full.Sub(change2)
	t.Logf("green %s took all of the traffic %v after the change", green2, toFull.Round(time.Millisecond))
	retireBy := time.Duration(trafficTuning.retireAfterSeconds)*time.Second + timeout
	if rev := waitRetired(t, ns, name, green2, rev1, retireBy); rev != x.revs[2] {
		t.Errorf("good revision %s after the rollout, want %s", rev, x.revs[2])
	}
	expectOnly(t, "after green took everything", waitAnswers(t, x.req, waitApplied(t, x.routes, weightsFor(blue, green2, 100), full), 100), green2, x.revs[2])
	retired := time.Now()
	x.req.Close()

	all := x.req.All()
	x.revisionsBy(change1, change2, green1, green2)
	steps := checkSteps(t, x.routes, x.req, change1, change2)
	logSteps(t, "bluegreen-rollout1", green1, steps)
	steps = checkSteps(t, x.routes, x.req, change2, retired)
	logSteps(t, "bluegreen-rollout2", green2, steps)
	failed := count(all).failed
	t.Log(chaos.FigureLine("bluegreen", "step", trafficTuning.stepPercent, "interval", time.Duration(trafficTuning.intervalSeconds)*time.Second,
		"change_to_100pct", toFull, "requests", len(all), "failed", failed))
	t.Logf("answers: %s", count(all))
	expectNoFailures(t, x.routes, all)
}

// deploysGreen waits for the rollout that change started to name its green member, and checks
// that while green deploys every answer comes from blue; it returns the green member and
// records the target revision.
func (x *trafficRun) deploysGreen(change time.Time) string {
	t := x.t
	t.Helper()
	green := waitGreen(t, x.ns, x.name, x.blue)
	var target string
	eventually(t, func(g gomega.Gomega) {
		ro := binding(g, x.ns, x.name).Status.Rollout
		g.Expect(ro.TargetRevision).NotTo(gomega.BeElementOf(x.revs), "target revision")
		target = ro.TargetRevision
	})
	x.revs = append(x.revs, target)
	blueOnly := weightsFor(x.blue, green, 0)
	var shifted time.Time
	eventuallyFor(t, firstRevisionTimeout, func(g gomega.Gomega) {
		var ok bool
		shifted, ok = x.routes.changedAt(blueOnly, change)
		g.Expect(ok).To(gomega.BeTrue(), "the route giving green anything; rollout: %s", binding(g, x.ns, x.name).Status.Rollout.Message)
	})
	t.Logf("green %s deployed; the first step was written %v after the change", green, shifted.Sub(change).Round(time.Millisecond))
	expectOnly(t, "while green deploys", x.req.Between(change, shifted.Add(-routeSeenLate)), x.blue, x.revs[0])
	return green
}

// steps waits for the gateway to accept each of the green shares given, in turn, from since on.
func (x *trafficRun) steps(green string, since time.Time, percents ...int32) {
	x.t.Helper()
	for _, p := range percents {
		since = waitAccepted(x.t, x.routes, weightsFor(x.blue, green, p), since, stepTimeout)
		x.t.Logf("%s: green %s at %d%% accepted", since.Format("15:04:05.000"), green, p)
	}
}

// greenFault takes green out of the hub's sight and brings it back.
type greenFault struct {
	// what names the fault in messages: "its API server stopped".
	what, undone string
	start        func(member string) error
	end          func(ctx context.Context, member string) error
}

// The faults greenDown injects: green's API server stopped (the hub's connections refused),
// and green partitioned from the hub (chaos row 8: the hub's connections go silent).
var (
	apiServerDown = greenFault{what: "its API server stopped", undone: "its API server was started",
		start: func(m string) error { return fleet.StopMemberAPIServer(m) },
		end:   func(ctx context.Context, m string) error { return fleet.StartMemberAPIServer(ctx, m) }}
	partitioned = greenFault{what: "it was partitioned from the hub", undone: "the partition healed",
		start: func(m string) error { return fleet.Partition(m) },
		end:   func(_ context.Context, m string) error { return fleet.Heal(m) }}
)

// greenDown takes green out of the hub's sight (f) at the current step. Green's serve endpoint
// still answers the hub's probe, so the route keeps green's share (answers keep coming from
// both colours) while the shift holds at the share it had reached (between 0 and 100 %): the
// data plane decides a backend's traffic, the control plane the rollout's pace. Once green is
// back the shift goes on; it returns the share green then has and when the fault ended.
func (x *trafficRun) greenDown(green string, f greenFault) (int32, time.Time) {
	t := x.t
	t.Helper()
	down := true
	t.Cleanup(func() {
		if down {
			if err := f.end(context.Background(), green); err != nil {
				t.Errorf("ending the fault on %s (%s): %v", green, f.what, err)
			}
		}
	})
	stopped := time.Now()
	if err := f.start(green); err != nil {
		t.Fatalf("%s: %s: %v", green, f.what, err)
	}
	var percent int32
	eventuallyFor(t, memberTransitionTimeout, func(g gomega.Gomega) {
		c := trafficShifting(g, x.ns, x.name)
		g.Expect(c).NotTo(gomega.BeNil(), "TrafficShifting")
		g.Expect(c.Reason).To(gomega.Equal(fleetv1alpha1.ReasonShiftPaused), "TrafficShifting: %s", c.Message)
		g.Expect(c.Message).To(gomega.ContainSubstring(green+" keeps its traffic"), "TrafficShifting")
		bg := blueGreenOf(binding(g, x.ns, x.name))
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen")
		percent = bg.GreenPercent
	})
	t.Logf("green %s down: the shift paused at %d%% %v after %s, green keeping its share",
		green, percent, time.Since(stopped).Round(time.Millisecond), f.what)
	if percent <= 0 || percent >= 100 {
		t.Fatalf("the shift paused at %d%%, not between 0 and 100%%; route:%s", percent, x.routes.history())
	}
	// Longer than an interval: a shift that did not pause would have taken its next step.
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		bg := blueGreenOf(binding(g, x.ns, x.name))
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen")
		g.Expect(bg.GreenPercent).To(gomega.Equal(percent), "greenPercent while green is down")
		s, err := readRoute(context.Background(), x.ns, x.name)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(s.weights).To(gomega.Equal(weightsFor(x.blue, green, percent)), "route while green is down (%s)", f.what)
	}).WithTimeout(time.Duration(trafficTuning.intervalSeconds)*time.Second + 5*time.Second).WithPolling(poll).Should(gomega.Succeed())

	// Before the end: StartMemberAPIServer returns once the server is ready, and the hub may
	// reach it, and take the next step, before that.
	back := time.Now()
	if err := f.end(t.Context(), green); err != nil {
		t.Fatalf("%s: ending the fault (%s): %v", green, f.what, err)
	}
	down = false
	var resumed int32
	eventuallyFor(t, memberTransitionTimeout, func(g gomega.Gomega) {
		bg := blueGreenOf(binding(g, x.ns, x.name))
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen")
		g.Expect(bg.GreenPercent).To(gomega.BeNumerically(">", percent), "greenPercent after green is back; route:%s", x.routes.history())
		resumed = bg.GreenPercent
	})
	t.Logf("green %s back: the shift went on to %d%% %v after %s", green, resumed, time.Since(back).Round(time.Millisecond), f.undone)
	return resumed, back
}

// undo runs `rayfleet rollout undo` mid-shift: the gateway accepts a route giving blue
// everything within undoWithin, answers come from blue only from then on, green leaves
// (RolledBack) and its copy is removed no sooner than the drain after that acceptance.
func (x *trafficRun) undo(green string) {
	t := x.t
	t.Helper()
	// The copy is there: green was serving a moment ago.
	undone := rolloutUndo(t, x.ns, x.name)
	off := waitAccepted(t, x.routes, weightsFor(x.blue, green, 0), undone, timeout)
	t.Log(chaos.FigureLine("bluegreen-undo", "undo_to_blue_accepted", off.Sub(undone)))
	if off.Sub(undone) > undoWithin {
		t.Errorf("the gateway accepted a route giving blue everything %v after the undo, want within %v; route:%s",
			off.Sub(undone).Round(time.Millisecond), undoWithin, x.routes.history())
	}
	// The binding shows green leaving for the whole drain, so a poll sees it.
	eventually(t, func(g gomega.Gomega) {
		b := binding(g, x.ns, x.name)
		g.Expect(blueGreenOf(b)).To(gomega.BeNil(), "blue/green still in flight after the undo")
		g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{x.blue}), "placed clusters after the undo")
		cs := clusterStatus(b, green)
		g.Expect(cs).NotTo(gomega.BeNil(), "binding status of %s", green)
		g.Expect(cs.Leaving).NotTo(gomega.BeNil(), "binding status of %s: leaving", green)
		g.Expect(cs.Leaving.Reason).To(gomega.Equal(fleetv1alpha1.LeaveRolledBack), "leaving reason of %s", green)
	})
	lastPresent, gone := waitCopyGone(t, green, x.ns, x.name, undone, drainDelay+timeout)
	t.Log(chaos.FigureLine("bluegreen-undo", "green_removed_after_off", gone.Sub(off)))
	if earliest := off.Add(drainDelay - wholeSecondSlack - 2*poll); lastPresent.Before(earliest) {
		t.Errorf("green %s's copy was gone by %s, %v after the gateway accepted a route without it, within the %v drain",
			green, lastPresent.Format("15:04:05.000"), lastPresent.Sub(off).Round(time.Millisecond), drainDelay)
	}
	expectOnly(t, "after the undo", waitAnswers(t, x.req, waitApplied(t, x.routes, weightsFor(x.blue, green, 0), off), 100), x.blue, x.revs[0])
	x.lastGreen(green, off)
}

// lastGreen logs when green last answered before off (the gateway accepting a route without
// it): how long the gateway took to apply what it accepted.
func (x *trafficRun) lastGreen(green string, off time.Time) {
	var last time.Time
	for _, a := range x.req.Between(off.Add(-time.Minute), off.Add(time.Minute)) {
		if !a.Failed() && a.Value.Cluster == green {
			last = a.Sent
		}
	}
	if !last.IsZero() {
		x.t.Log(chaos.FigureLine("bluegreen-undo", "last_green_answer_after_accepted", last.Sub(off)))
	}
}

// revisionsBy checks that every answer came with the revision its cluster served at the time:
// blue the first throughout, green1 the second before change2, green2 the third after it.
func (x *trafficRun) revisionsBy(change1, change2 time.Time, green1, green2 string) {
	t := x.t
	t.Helper()
	phases := []struct {
		from, to time.Time
		want     map[string]string
	}{
		{time.Time{}, change1, map[string]string{x.blue: x.revs[0]}},
		{change1, change2, map[string]string{x.blue: x.revs[0], green1: x.revs[1]}},
		{change2, time.Now().Add(time.Hour), map[string]string{x.blue: x.revs[0], green2: x.revs[2]}},
	}
	for _, p := range phases {
		var wrong []string
		for _, a := range x.req.Between(p.from, p.to) {
			if !a.Failed() && p.want[a.Value.Cluster] != a.Value.Revision {
				wrong = append(wrong, a.String())
			}
		}
		if len(wrong) > 0 {
			t.Errorf("from %s: %d answers with a cluster or revision other than %v, e.g. %v",
				p.from.Format(time.TimeOnly), len(wrong), p.want, wrong[:min(len(wrong), 10)])
		}
	}
}
