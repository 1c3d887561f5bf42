//go:build e2e

package bluegreen

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// gatewayLag is how long after the route's status says the gateway accepted a generation
// requests may still be routed by the previous one: Traefik writes the status while it builds
// its configuration and applies that configuration once its providers' throttle (2 s by
// default) allows. Answers within it are not held against the new weights.
const gatewayLag = 2 * time.Second

// routeSeenLate is how much later than the route's spec changed the recorder may see it: one
// read interval, and the read itself. The gateway, which watches the route, may act on the
// change that much before the recorder's time for it.
const routeSeenLate = 2 * routePoll

// shareTolerance is how far a cluster's share of the answers during a step may be from its
// weight, in percentage points. Traefik's weighted round robin is a deterministic earliest-
// deadline-first schedule, so over n requests each backend's count is within about one request
// of n·weight/total; a step's window (an interval less gatewayLag, 8 s or more at 50 requests
// a second) holds hundreds of requests, putting the schedule's error under 1 point. The rest of
// the margin covers a window's edges (the recorder reads the route every 100 ms, and a
// Traefik reload starts a fresh schedule). A cluster the route gives nothing must answer
// nothing at all.
const shareTolerance = 10.0

// minStepAnswers is the fewest answers a window needs for its shares to be checked: fewer make
// a share too coarse to compare with a weight.
const minStepAnswers = 100

// stepTimeout bounds the wait for the next step: an interval, the reconcile and the gateway's
// acceptance, on a loaded machine.
const stepTimeout = 90 * time.Second

// weightsFor are the route's weights with green at percent: of 10000, a cluster without any
// left out (the hub gives it no backendRef).
func weightsFor(blue, green string, percent int32) map[string]int32 {
	w := map[string]int32{}
	if percent < 100 {
		w[blue] = (100 - percent) * 100
	}
	if percent > 0 {
		w[green] = percent * 100
	}
	return w
}

// waitAccepted waits until the recorder saw the gateway accept the route with weights want at
// or after since, and returns when.
func waitAccepted(t *testing.T, routes *routeRecorder, want map[string]int32, since time.Time, within time.Duration) time.Time {
	t.Helper()
	var at time.Time
	eventuallyFor(t, within, func(g gomega.Gomega) {
		var ok bool
		at, ok = routes.acceptedAt(want, since)
		g.Expect(ok).To(gomega.BeTrue(), "route accepted with %s since %s; route so far:%s",
			weightsText(want), since.Format("15:04:05.000"), routes.history())
	})
	return at
}

// waitApplied waits until the recorder saw Traefik route by weights want at or after since, and
// returns the time from which every request sent is routed by them: the first read showing
// them, plus appliedMargin.
func waitApplied(t *testing.T, routes *routeRecorder, want map[string]int32, since time.Time) time.Time {
	t.Helper()
	var at time.Time
	eventually(t, func(g gomega.Gomega) {
		var ok bool
		at, ok = routes.appliedAt(want, since)
		g.Expect(ok).To(gomega.BeTrue(), "traefik routing by %s since %s; route so far:%s",
			weightsText(want), since.Format("15:04:05.000"), routes.history())
	})
	return at.Add(appliedMargin)
}

// waitAnswers waits until at least n requests were sent in [from, ∞), and returns them.
func waitAnswers(t *testing.T, req *requester, from time.Time, n int) []answer {
	t.Helper()
	var out []answer
	eventually(t, func(g gomega.Gomega) {
		out = req.Between(from, time.Now().Add(time.Hour))
		g.Expect(len(out)).To(gomega.BeNumerically(">=", n), "answers since %s", from.Format("15:04:05.000"))
	})
	return out
}

// expectOnly checks that every answer among answers came from cluster with revision rev.
func expectOnly(t *testing.T, what string, answers []answer, cluster, rev string) {
	t.Helper()
	var wrong []string
	for _, a := range answers {
		if !a.Failed() && (a.Value.Cluster != cluster || a.Value.Revision != rev) {
			wrong = append(wrong, a.String())
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%s: %d of %d answers not from %s revision %s, e.g. %s", what, len(wrong), len(answers), cluster, rev,
			strings.Join(wrong[:min(len(wrong), 10)], "; "))
	}
}

// stepFigure is what one accepted step of the route saw.
type stepFigure struct {
	from, to time.Time
	weights  map[string]int32
	tally    tally
}

// checkSteps checks, for each stretch between since and until during which the gateway had
// accepted the route with the same weights, that each cluster's share of the answers to
// requests sent within it (from gatewayLag after the acceptance to routeSeenLate before the
// recorder saw the route change again) matches its weight within shareTolerance, and exactly
// for a cluster the route gives nothing. It returns the stretches with their tallies.
func checkSteps(t *testing.T, routes *routeRecorder, req *requester, since, until time.Time) []stepFigure {
	t.Helper()
	var out []stepFigure
	for _, p := range routes.acceptedPeriods(since, until) {
		from, to := p.from.Add(gatewayLag), p.to.Add(-routeSeenLate)
		if !from.Before(to) {
			continue
		}
		answers := req.Between(from, to)
		f := stepFigure{from: from, to: to, weights: p.weights, tally: count(answers)}
		out = append(out, f)
		var total int32
		for _, w := range p.weights {
			total += w
		}
		answered := f.tally.total - f.tally.failed
		for _, m := range members {
			want := 0.0
			if total > 0 {
				want = 100 * float64(p.weights[m]) / float64(total)
			}
			got := 100 * f.tally.share(m)
			switch {
			case want == 0 && f.tally.byCluster[m] > 0:
				t.Errorf("route %s accepted %s–%s: %s answered %d of %d requests sent %s–%s, and the route gives it nothing: %s",
					weightsText(p.weights), p.from.Format("15:04:05.000"), p.to.Format("15:04:05.000"), m,
					f.tally.byCluster[m], answered, from.Format("15:04:05.000"), to.Format("15:04:05.000"), answersFrom(answers, m))
			case answered >= minStepAnswers && math.Abs(got-want) > shareTolerance:
				t.Errorf("route %s accepted %s–%s: %s answered %.1f%% of %d requests, want %.1f%% ± %.0f",
					weightsText(p.weights), p.from.Format("15:04:05.000"), p.to.Format("15:04:05.000"), m, got, answered, want, shareTolerance)
			}
		}
	}
	return out
}

// answersFrom lists (up to 10 of) the answers cluster gave.
func answersFrom(answers []answer, cluster string) string {
	var out []string
	for _, a := range answers {
		if !a.Failed() && a.Value.Cluster == cluster && len(out) < 10 {
			out = append(out, a.String())
		}
	}
	return strings.Join(out, "; ")
}

// logSteps prints one FIGURE line per step: its weights, the requests sent within it and the
// share green answered.
func logSteps(t *testing.T, test, green string, steps []stepFigure) {
	t.Helper()
	for _, s := range steps {
		t.Logf("FIGURE %s-step from=%s to=%s weights=%s green=%s green_weight=%d requests=%d failed=%d green_share=%.3f",
			test, s.from.Format("15:04:05.000"), s.to.Format("15:04:05.000"), weightsText(s.weights), green,
			s.weights[green], s.tally.total, s.tally.failed, s.tally.share(green))
	}
}

// expectNoFailures fails the test with every failed request (up to 30), each with the route
// states around it, so that a failure can be tied to what the hub and the gateway were doing.
func expectNoFailures(t *testing.T, routes *routeRecorder, answers []answer) {
	t.Helper()
	var failed []answer
	for _, a := range answers {
		if a.Failed() {
			failed = append(failed, a)
		}
	}
	if len(failed) == 0 {
		return
	}
	states := routes.snapshot()
	var b strings.Builder
	for _, a := range failed[:min(len(failed), 30)] {
		b.WriteString("\n  " + a.String())
		i := slices.IndexFunc(states, func(s routeState) bool { return s.at.After(a.Sent) })
		if i < 0 {
			i = len(states)
		}
		for _, s := range states[max(0, i-2):min(len(states), i+1)] {
			b.WriteString("\n      route " + s.String())
		}
	}
	t.Errorf("%d of %d requests through the gateway failed (first %d shown, each with the route states around it):%s",
		len(failed), len(answers), min(len(failed), 30), b.String())
}

// gatewayURL is where the requests go: the fleet's Gateway at the route's path prefix.
func gatewayURL() string {
	return fleet.GatewayURL + "/"
}

// firstServed waits until the gateway accepted a route giving blue everything and a request
// through the gateway is answered by blue with rev.
func firstServed(t *testing.T, routes *routeRecorder, blue, rev string) {
	t.Helper()
	waitAccepted(t, routes, map[string]int32{blue: 10000}, time.Time{}, timeout)
	eventually(t, func(g gomega.Gomega) {
		a := probeGateway(t.Context())
		g.Expect(a.Err).NotTo(gomega.HaveOccurred())
		g.Expect(a.Value.Cluster + " " + a.Value.Revision).To(gomega.Equal(blue + " " + rev))
	})
}
