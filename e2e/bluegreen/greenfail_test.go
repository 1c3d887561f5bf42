//go:build e2e

package bluegreen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/chaos"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// endpointTuning is TestBlueGreenGreenEndpointFails's rollout: quarter steps every 10 s, as in
// TestBlueGreenTraffic.
var endpointTuning = blueGreen{stepPercent: 25, intervalSeconds: 10, retireAfterSeconds: 20}

// endpointDeadline is the test's progressDeadlineSeconds: how long green may fail its probe
// before the shift reverts. Short, so that the revert comes within the test, and long enough for
// green to deploy on a loaded machine (the deadline bounds that too).
const endpointDeadline = 45 * time.Second

// offWithin bounds how long after green's serve endpoint starts failing the hub may take to
// write a route without it: 2 failed probes 2 s apart (hub/ROLLOUTS.md says 4–5 s) and a
// reconcile, with room for a loaded machine.
const offWithin = 10 * time.Second

// injectedFault is what a failing stand-in answers (loadbalancer.Controller.SetFailing); a
// failed request saying otherwise is not the fault's doing.
const injectedFault = "failing (injected fault)"

// endpointRun is TestBlueGreenGreenEndpointFails's state.
type endpointRun struct {
	t           *testing.T
	ns, name    string
	routes      *routeRecorder
	req         *requester
	blue, green string
	rev1        string
	// windows are the stretches [kill, Traefik routing without green + appliedMargin] in
	// which requests may fail.
	windows []window
}

// window is a stretch of time in which failed requests are expected.
type window struct{ from, to time.Time }

// TestBlueGreenGreenEndpointFails is chaos row 10: green's serve endpoint fails mid-shift while
// its API server and spoke keep running (its load balancer stand-in answers 503 to everything,
// the hub's probe included). The hub's probe takes green's weight off within offWithin and the
// shift pauses, green counting as not done; green healed before the progress deadline gets its
// share back and the shift goes on. Failing again, past the deadline, the shift reverts: the
// revision failed, green no longer placed, and green healed afterwards gets nothing back.
// Requests fail only between a failure and the gateway applying a route without green; no
// copy is replaced.
func TestBlueGreenGreenEndpointFails(t *testing.T) {
	const ns, name = "bg-endpoint", "cherry"
	waitMembersReady(t)
	spec := policySpec(endpointTuning, true)
	spec.Rollout.SoakSeconds = ptr.To(int32(0))
	spec.Rollout.ProgressDeadlineSeconds = ptr.To(int32(endpointDeadline / time.Second))
	setUp(t, ns, name, spec)
	x := &endpointRun{t: t, ns: ns, name: name, routes: recordRoute(t, ns, name)}

	blue, rev1 := firstRevision(t, ns, name)
	x.blue, x.rev1 = blue, rev1
	firstServed(t, x.routes, blue, rev1)
	x.req = startRequests(t, gatewayURL())

	change := newVersion(t, ns, name, "2")
	x.green = waitGreen(t, ns, name, blue)
	green := x.green
	at25 := waitAccepted(t, x.routes, weightsFor(blue, green, 25), change, firstRevisionTimeout)
	t.Logf("%s: green %s at 25%% accepted", at25.Format("15:04:05.000"), green)
	uids := x.copyUIDs()
	healed := true
	t.Cleanup(func() {
		if !healed {
			if err := fleet.HealServeEndpoint(green); err != nil {
				t.Errorf("healing the serve endpoint of %s: %v", green, err)
			}
		}
	})

	// First failure, healed before the deadline: green's share comes back, the shift goes on.
	healed = false
	detect1, off1, served1 := x.fail()
	x.expectPaused(25)
	heal := time.Now()
	x.heal()
	healed = true
	back, percent := x.shareBack(heal)
	expectOnly(t, "while green's endpoint failed", x.req.Between(served1, heal), blue, rev1)
	t.Logf("green %s back at %d%% %v after the heal", green, percent, back.Sub(heal).Round(time.Millisecond))

	// Second failure, past the deadline: the shift reverts and the revision fails.
	healed = false
	kill2 := time.Now()
	detect2, off2, _ := x.fail()
	stepTime := x.expectPaused(percent)
	reverted := x.expectReverted(stepTime)
	x.heal()
	healed = true
	x.staysOnBlue()
	x.req.Close()

	x.expectCopies(uids)
	all := x.req.All()
	inWindows, outside := x.failures(all)
	last := x.lastFailure(all)
	t.Log(chaos.FigureLine("bluegreen-greenfail", "detect_route_written", detect1, "detect_route_accepted", off1.Sub(x.windows[0].from),
		"window", x.windows[0].to.Sub(x.windows[0].from), "last_failure_after_kill", last[0],
		"recover_share_accepted", back.Sub(heal), "detect2_route_written", detect2, "detect2_route_accepted", off2.Sub(kill2),
		"window2", x.windows[1].to.Sub(x.windows[1].from), "last_failure2_after_kill", last[1],
		"kill2_to_reverted", reverted.Sub(kill2), "deadline", endpointDeadline,
		"requests", len(all), "failed_in_windows", inWindows, "failed_outside", len(outside)))
	if len(outside) > 0 {
		expectNoFailures(t, x.routes, outside)
	}
}

// fail makes green's serve endpoint fail and waits for the hub to write, the gateway to accept
// and Traefik to route by a route giving blue everything. It returns how long the hub took to
// write it, when the gateway accepted it and from when requests are routed by it, and records
// the window in which requests may fail.
func (x *endpointRun) fail() (detect time.Duration, off, served time.Time) {
	t := x.t
	t.Helper()
	kill := time.Now()
	if err := fleet.FailServeEndpoint(x.green); err != nil {
		t.Fatalf("failing the serve endpoint of %s: %v", x.green, err)
	}
	blueOnly := weightsFor(x.blue, x.green, 0)
	off = waitAccepted(t, x.routes, blueOnly, kill, timeout)
	written, _ := x.routes.changedTo(blueOnly, kill)
	detect = written.Sub(kill)
	served = waitApplied(t, x.routes, blueOnly, kill)
	x.windows = append(x.windows, window{from: kill, to: served})
	t.Logf("green %s's endpoint failing: route without it written after %v, accepted after %v, routed by after %v",
		x.green, detect.Round(time.Millisecond), off.Sub(kill).Round(time.Millisecond), served.Add(-appliedMargin).Sub(kill).Round(time.Millisecond))
	if detect > offWithin {
		t.Errorf("the hub wrote a route without green %s %v after its endpoint failed, want within %v; route:%s",
			x.green, detect.Round(time.Millisecond), offWithin, x.routes.history())
	}
	return detect, off, served
}

// heal makes green's serve endpoint serve again.
func (x *endpointRun) heal() {
	x.t.Helper()
	if err := fleet.HealServeEndpoint(x.green); err != nil {
		x.t.Fatalf("healing the serve endpoint of %s: %v", x.green, err)
	}
}

// expectPaused checks that the shift pauses at atLeast or a later step it took before the
// failure was seen, TrafficShifting naming green's failing endpoint, and returns the step's
// time, which the progress deadline counts from.
func (x *endpointRun) expectPaused(atLeast int32) time.Time {
	t := x.t
	t.Helper()
	var stepTime time.Time
	eventually(t, func(g gomega.Gomega) {
		c := trafficShifting(g, x.ns, x.name)
		g.Expect(c).NotTo(gomega.BeNil(), "TrafficShifting")
		g.Expect(c.Reason).To(gomega.Equal(fleetv1alpha1.ReasonShiftPaused), "TrafficShifting: %s", c.Message)
		g.Expect(c.Message).To(gomega.ContainSubstring(x.green+": serve endpoint failing"), "TrafficShifting")
		bg := blueGreenOf(binding(g, x.ns, x.name))
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen")
		g.Expect(bg.GreenPercent).To(gomega.BeNumerically(">=", atLeast), "greenPercent while green's endpoint fails")
		g.Expect(bg.GreenPercent).To(gomega.BeNumerically("<", 100), "greenPercent while green's endpoint fails")
		g.Expect(bg.StepTime).NotTo(gomega.BeNil(), "stepTime")
		stepTime = bg.StepTime.Time
	})
	return stepTime
}

// shareBack waits until the gateway accepted a route giving green its share again (at the
// shift's percent, which may have moved on) after heal, and returns when and the percent.
func (x *endpointRun) shareBack(heal time.Time) (time.Time, int32) {
	t := x.t
	t.Helper()
	var at time.Time
	var percent int32
	eventually(t, func(g gomega.Gomega) {
		bg := blueGreenOf(binding(g, x.ns, x.name))
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen")
		g.Expect(bg.GreenPercent).To(gomega.BeNumerically(">", 0))
		g.Expect(bg.GreenPercent).To(gomega.BeNumerically("<", 100), "green took everything; nothing left to revert")
		var ok bool
		at, ok = x.routes.acceptedAt(weightsFor(x.blue, x.green, bg.GreenPercent), heal)
		g.Expect(ok).To(gomega.BeTrue(), "route giving green %d%% accepted; route:%s", bg.GreenPercent, x.routes.history())
		percent = bg.GreenPercent
	})
	return at, percent
}

// expectReverted waits for the shift to revert at the progress deadline counted from
// stepTime: the revision failed, the rollout complete on blue, green no longer placed. It
// returns when the revert was seen.
func (x *endpointRun) expectReverted(stepTime time.Time) time.Time {
	t := x.t
	t.Helper()
	deadline := stepTime.Add(endpointDeadline)
	var seen time.Time
	// The binding, not TrafficShifting: ShiftReverted lasts one reconcile, then the condition
	// says TrafficSteady on blue.
	eventuallyFor(t, endpointDeadline+timeout, func(g gomega.Gomega) {
		b := binding(g, x.ns, x.name)
		ro := b.Status.Rollout
		g.Expect(ro.BlueGreen).To(gomega.BeNil(), "blue/green still in flight: %s", ro.Message)
		g.Expect(ro.FailedRevision).To(gomega.Equal(ro.TargetRevision), "failed revision: %s", ro.Message)
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{x.blue}), "placed clusters after the revert")
		seen = time.Now()
	})
	if early := deadline.Add(-wholeSecondSlack); seen.Before(early) {
		t.Errorf("the shift reverted at %s, before the progress deadline %s", seen.Format("15:04:05.000"), deadline.Format("15:04:05.000"))
	}
	t.Logf("the shift reverted %v after the deadline (%s)", seen.Sub(deadline).Round(time.Millisecond), deadline.Format("15:04:05.000"))
	return seen
}

// staysOnBlue checks that green healed after the revert gets no traffic back: the revision
// failed and is not tried again until the spec changes.
func (x *endpointRun) staysOnBlue() {
	t := x.t
	t.Helper()
	// Longer than two probe intervals: a healed endpoint is serving again after one.
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		s, err := readRoute(context.Background(), x.ns, x.name)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(s.weights).To(gomega.Equal(weightsFor(x.blue, x.green, 0)), "route after green healed past the revert")
		ro := binding(g, x.ns, x.name).Status.Rollout
		g.Expect(ro.FailedRevision).To(gomega.Equal(ro.TargetRevision), "failed revision after green healed")
	}).WithTimeout(6 * time.Second).WithPolling(poll).Should(gomega.Succeed())
}

// copyUIDs are the UIDs of blue's and green's copies.
func (x *endpointRun) copyUIDs() map[string]types.UID {
	out := map[string]types.UID{}
	g := gomega.NewWithT(x.t)
	for _, m := range []string{x.blue, x.green} {
		c := memberCopy(g, m, x.ns, x.name)
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", m)
		out[m] = c.UID
	}
	return out
}

// expectCopies checks that blue's copy is the one it had (same UID), and green's too unless it
// is already gone (it leaves after the revert, as asked).
func (x *endpointRun) expectCopies(uids map[string]types.UID) {
	g := gomega.NewWithT(x.t)
	c := memberCopy(g, x.blue, x.ns, x.name)
	g.Expect(c).NotTo(gomega.BeNil(), "blue %s's copy", x.blue)
	g.Expect(c.UID).To(gomega.Equal(uids[x.blue]), "blue %s's copy replaced", x.blue)
	if c := memberCopy(g, x.green, x.ns, x.name); c != nil {
		g.Expect(c.UID).To(gomega.Equal(uids[x.green]), "green %s's copy replaced", x.green)
	}
}

// failures counts the failed requests sent within the windows, each of which must be the
// injected fault's answer, and returns the others.
func (x *endpointRun) failures(all []answer) (inWindows int, outside []answer) {
	for _, a := range all {
		if !a.Failed() {
			continue
		}
		in := false
		for _, w := range x.windows {
			in = in || (!a.Sent.Before(w.from) && a.Sent.Before(w.to))
		}
		switch {
		case in && a.Err != nil && strings.Contains(a.Err.Error(), injectedFault):
			inWindows++
		default:
			outside = append(outside, a)
		}
	}
	return inWindows, outside
}

// lastFailure is, per window, how long after its start the last failed request in it was
// sent (0 when none failed).
func (x *endpointRun) lastFailure(all []answer) []time.Duration {
	out := make([]time.Duration, len(x.windows))
	for i, w := range x.windows {
		for _, a := range all {
			if a.Failed() && !a.Sent.Before(w.from) && a.Sent.Before(w.to) {
				out[i] = max(out[i], a.Sent.Sub(w.from))
			}
		}
	}
	return out
}
