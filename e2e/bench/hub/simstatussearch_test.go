package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// pass and fail are steps at rate that met the target, and that did not.
func pass(rate float64) statusStep {
	return statusStep{asked: rate, sent: rate, changes: 1000, p99: 400 * time.Millisecond}
}

func fail(rate float64) statusStep {
	return statusStep{asked: rate, sent: rate, changes: 1000, p99: 3 * time.Second}
}

func TestStatusStepPasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		step statusStep
		want bool
	}{
		{"p99 under the target, sent as asked", pass(100), true},
		{"p99 at the target", statusStep{asked: 100, sent: 100, changes: 10, p99: time.Second}, false},
		{"sent 95 % of asked", statusStep{asked: 100, sent: 95, changes: 10, p99: time.Millisecond}, true},
		{"sent under 95 % of asked", statusStep{asked: 100, sent: 94, changes: 10, p99: time.Millisecond}, false},
		{"ended early", statusStep{asked: 100, sent: 100, changes: 10, endedEarly: true}, false},
		{"sent nothing", statusStep{asked: 100, sent: 100}, false},
	} {
		if got := tc.step.passes(); got != tc.want {
			t.Errorf("%s: passes() = %t, want %t", tc.name, got, tc.want)
		}
	}
}

func TestNextStatusRate(t *testing.T) {
	ladder := []float64{25, 50, 100, 200}
	many := make([]statusStep, maxStatusSteps)
	for i := range many {
		many[i] = pass(float64(i + 1))
	}
	for _, tc := range []struct {
		name     string
		steps    []statusStep
		left     int
		want     float64
		stopping bool
	}{
		{name: "first step: the ladder's first rate", want: 25},
		{name: "every step passed: up the ladder", steps: []statusStep{pass(25), pass(50)}, want: 100},
		{name: "the top of the ladder passed", steps: []statusStep{pass(25), pass(50), pass(100), pass(200)}, stopping: true},
		{name: "a failure: bisect", steps: []statusStep{pass(25), pass(50), pass(100), fail(200)}, want: 150},
		{name: "bisection passes: bisect above", steps: []statusStep{pass(100), fail(200), pass(150)}, want: 175},
		{name: "bisection fails: bisect below", steps: []statusStep{pass(100), fail(200), fail(150)}, want: 125},
		{name: "within 20 %: stop", steps: []statusStep{pass(100), fail(200), pass(150), pass(175)}, stopping: true},
		{name: "the first rate failed", steps: []statusStep{fail(25)}, stopping: true},
		{name: "a pass above a failure is not the bracket", steps: []statusStep{pass(50), fail(100), pass(200)}, want: 75},
		{name: "no fresh copies left", steps: []statusStep{pass(25)}, left: 999, stopping: true},
		{name: "step limit", steps: many, stopping: true},
	} {
		left := tc.left
		if left == 0 {
			left = 10000
		}
		got, why := nextStatusRate(ladder, tc.steps, left, 1000)
		if tc.stopping && (got != 0 || why == "") {
			t.Errorf("%s: nextStatusRate = %v, %q; want a stop with a reason", tc.name, got, why)
		}
		if !tc.stopping && (got != tc.want || why != "") {
			t.Errorf("%s: nextStatusRate = %v, %q; want %v", tc.name, got, why, tc.want)
		}
	}
}

func TestSustainableRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []statusStep
		want  float64
	}{
		{"none measured", nil, 0},
		{"none passed", []statusStep{fail(25)}, 0},
		{"the highest that passed", []statusStep{pass(25), pass(50), fail(100), pass(75)}, 75},
		{"every one passed", []statusStep{pass(25), pass(50)}, 50},
		{"not a pass above a failure", []statusStep{pass(50), fail(100), pass(200)}, 50},
		{"not a step that sent too slowly", []statusStep{pass(50), {asked: 100, sent: 80, changes: 1000, p99: time.Millisecond}}, 50},
	} {
		if got := sustainableRate(tc.steps); got != tc.want {
			t.Errorf("%s: sustainableRate = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestClearlyOver(t *testing.T) {
	for _, tc := range []struct {
		late, n int
		want    bool
	}{
		// Of 1,000 latencies the p99 is the 990th: 11 late make it late, 10 do not.
		{10, 1000, false},
		{11, 1000, true},
		// Of 35, the p99 is the last: one late makes it late.
		{0, 35, false},
		{1, 35, true},
		{0, 0, false},
	} {
		if got := clearlyOver(tc.late, tc.n); got != tc.want {
			t.Errorf("clearlyOver(%d, %d) = %t, want %t", tc.late, tc.n, got, tc.want)
		}
	}
}

func TestLateAtLeast(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sent := []time.Time{t0, t0.Add(100 * time.Millisecond), t0.Add(500 * time.Millisecond), t0.Add(1500 * time.Millisecond)}
	for _, tc := range []struct {
		name             string
		shown, shownLate int
		now              time.Time
		want             int
	}{
		{"nothing a second old yet", 0, 0, t0.Add(900 * time.Millisecond), 0},
		{"two a second old, none shown", 0, 0, t0.Add(1200 * time.Millisecond), 2},
		{"two a second old, one shown in time", 1, 0, t0.Add(1200 * time.Millisecond), 1},
		{"three old, all shown, one late", 3, 1, t0.Add(1600 * time.Millisecond), 1},
		{"more shown than old: the shown late count", 4, 2, t0.Add(1200 * time.Millisecond), 2},
	} {
		if got := lateAtLeast(sent, tc.shown, tc.shownLate, tc.now); got != tc.want {
			t.Errorf("%s: lateAtLeast = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestStatusStepSize(t *testing.T) {
	for _, tc := range []struct {
		asked, available, want int
	}{
		{asked: 500, available: 100, want: 500},
		{available: 16000, want: defaultStepChanges},
		{available: 320, want: 35},
		{available: 50, want: minStepChanges},
	} {
		if got := statusStepSize(tc.asked, tc.available, 9); got != tc.want {
			t.Errorf("statusStepSize(%d, %d, 9) = %d, want %d", tc.asked, tc.available, got, tc.want)
		}
	}
}

func TestStatusFloorImpliesFloor(t *testing.T) {
	cfg, err := parseArgs(flag.NewFlagSet("bench", flag.ContinueOnError), []string{"-status-floor", "-status-floor-changes=200"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.sim.enabled || !cfg.sim.floor || !cfg.sim.statusFloor.enabled || cfg.sim.statusFloor.changes != 200 {
		t.Errorf("-status-floor: sim %t, floor %t, status floor %+v; want -sim -floor with 200 changes a step",
			cfg.sim.enabled, cfg.sim.floor, cfg.sim.statusFloor)
	}
}

func TestPrintStatusFloor(t *testing.T) {
	var out strings.Builder
	printStatusFloor(&out, statusFloor{steps: []statusStep{pass(25), fail(50)}, sustainable: 25,
		stopped: "the lowest rate tried failed", stepSize: 1000, copies: 16000})
	for _, want := range []string{"rate asked (/s)", "floor: highest status-change rate with p99 < 1 s (sent >= 95 % of asked): 25/s",
		"search ended: the lowest rate tried failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printStatusFloor lacks %q:\n%s", want, out.String())
		}
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 6 {
		t.Errorf("printStatusFloor printed %d lines, want a title, a header, 2 steps and 2 summary lines:\n%s", len(lines), out.String())
	}
}
