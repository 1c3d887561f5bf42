package main

// The status floor's rate search (-status-floor): which rate to try next, when a step is
// clearly over the target, and which rate the floor sustains. Pure functions of the steps
// measured; simstatusfloor.go carries them out.

import (
	"math"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

// statusLadder are the rates (changes per second) the search tries in turn until one fails;
// it then bisects between the highest that passed and the lowest that failed.
var statusLadder = []float64{25, 50, 100, 150, 200, 300, 400, 600, 800}

const (
	// maxStatusSteps bounds the search: with 1,000 changes a step, 12 steps use at most 12,000
	// of the 16,000 copies 10,000 RayServices have.
	maxStatusSteps = 12
	// bisectUntil ends the bisection once the lowest failing rate is within 20 % of the highest
	// passing one: closer than that, two steps on a loaded machine do not tell them apart.
	bisectUntil = 1.2
	// minSentShare is the share of the asked rate a step must send to count: below it the
	// harness or the member API server, not the status path, set the pace.
	minSentShare = 0.95
	// defaultStepChanges and minStepChanges bound the changes a step sends when
	// -status-floor-changes does not say.
	defaultStepChanges = 1000
	minStepChanges     = 20
)

// statusStep is one step of the search.
type statusStep struct {
	// asked is the rate asked; sent the rate the changes went out at (first to last send).
	asked, sent float64
	// changes are the changes sent; endedEarly is set when the step stopped sending because
	// its p99 was already over the target.
	changes    int
	endedEarly bool
	// p50 and p99 are change -> shown on the hub RayService.
	p50, p99 time.Duration
	// cpuPerChange is the control planes' CPU (both API servers and etcds) per change.
	cpuPerChange time.Duration
	// callsPerChange are the requests the floor's writer sent per change (events included);
	// writesPerChange its writes of RayService work per change as the audit logs count them.
	callsPerChange, writesPerChange float64
	// window is the step's span, first send to the last change shown and the writer idle.
	window benchutil.Window
	// failures are the status writes refused and queued again; eventsFailed the events lost.
	failures, eventsFailed int64
}

// passes reports whether s met the target at its rate: every change sent, at no less than
// minSentShare of the rate asked, with p99 under the target.
func (s statusStep) passes() bool {
	return !s.endedEarly && s.changes > 0 && s.p99 < simTargetStatusP99 && s.sent >= minSentShare*s.asked
}

// statusStepSize is the changes each step sends: asked (-status-floor-changes) when set, else
// enough for every rate of the ladder out of available, between minStepChanges and
// defaultStepChanges.
func statusStepSize(asked, available, ladder int) int {
	if asked > 0 {
		return asked
	}
	return max(minStepChanges, min(defaultStepChanges, available/max(1, ladder)))
}

// nextStatusRate is the rate of the next step, or 0 and why the search ends: up the ladder
// while every step passes, then halving the gap between the highest rate that passed below
// the lowest that failed and that one. left is how many fresh changes remain; size how many a
// step takes.
func nextStatusRate(ladder []float64, steps []statusStep, left, size int) (float64, string) {
	if len(steps) >= maxStatusSteps {
		return 0, "step limit reached"
	}
	if left < size || size <= 0 {
		return 0, "no fresh copies left for another step"
	}
	lo, hi := bracket(steps)
	if hi == 0 {
		for _, r := range ladder {
			if r > lo {
				return r, ""
			}
		}
		return 0, "every rate of the ladder passed"
	}
	if lo == 0 {
		return 0, "the lowest rate tried failed"
	}
	if hi <= lo*bisectUntil {
		return 0, "bisected to within 20 %"
	}
	mid := math.Round((lo + hi) / 2)
	for _, s := range steps {
		if s.asked == mid {
			return 0, "bisected to within one change per second"
		}
	}
	return mid, ""
}

// bracket is the lowest rate that failed (0: none) and the highest that passed below it.
func bracket(steps []statusStep) (lo, hi float64) {
	for _, s := range steps {
		if !s.passes() && (hi == 0 || s.asked < hi) {
			hi = s.asked
		}
	}
	for _, s := range steps {
		if s.passes() && (hi == 0 || s.asked < hi) {
			lo = max(lo, s.asked)
		}
	}
	return lo, hi
}

// sustainableRate is the floor's sustainable status rate: the highest rate asked that passed
// below every rate that failed (a pass above a failure is noise, not a rate the floor
// sustains); 0 when none passed.
func sustainableRate(steps []statusStep) float64 {
	lo, _ := bracket(steps)
	return lo
}

// clearlyOver reports whether a step of n changes has its p99 at or over the target already,
// late of them known to take the target or longer: the p99 (benchutil.Percentile) is then
// one of those, whatever the others take.
func clearlyOver(late, n int) bool {
	// benchutil.Percentile's index of the p99 among n sorted latencies.
	idx := int(0.99*float64(n)+0.999999) - 1
	return n > 0 && late >= n-max(0, idx)
}

// lateAtLeast is how many of a step's changes are known to take the target or longer at now:
// those shown that took it (shownLate), and those sent before now less the target of which at
// most shown can have been shown. sentAt are the send times, ascending.
func lateAtLeast(sentAt []time.Time, shown, shownLate int, now time.Time) int {
	cutoff := now.Add(-simTargetStatusP99)
	old := 0
	for old < len(sentAt) && !sentAt[old].After(cutoff) {
		old++
	}
	return shownLate + max(0, old-shown)
}
