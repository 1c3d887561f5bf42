//go:build e2e

package bluegreen

import (
	"os"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/chaos"
)

// figuresEnv, set to "1", runs TestBlueGreenFigures: it measures rather than checks and takes
// several minutes, so a plain run of the package skips it.
const figuresEnv = "RAYFLEET_E2E_BG_FIGURES"

// TestBlueGreenFigures measures how long a spec change takes to reach 100 % green through the
// fleet's Gateway, with the default steps (stepPercent 20, intervalSeconds 30, left unset in
// the policy) and with stepPercent 50 every 5 s, while a client sends requests through the
// Gateway; it prints FIGURE lines and fails only on failed requests or a rollout that does not
// finish. Run with RAYFLEET_E2E_BG_FIGURES=1.
func TestBlueGreenFigures(t *testing.T) {
	if os.Getenv(figuresEnv) != "1" {
		t.Skipf("measures only; set %s=1 to run it", figuresEnv)
	}
	waitMembersReady(t)
	// The hold is not measured; a short one lets each case finish and clean up quickly.
	for _, c := range []struct {
		name string
		bg   blueGreen
	}{
		{name: "defaults", bg: blueGreen{retireAfterSeconds: 10}},
		{name: "step50-interval5", bg: blueGreen{stepPercent: 50, intervalSeconds: 5, retireAfterSeconds: 10}},
	} {
		t.Run(c.name, func(t *testing.T) { measureToGreen(t, c.name, c.bg) })
	}
}

// measureToGreen rolls a second revision of a fresh RayService out under bg, in namespace
// bg-figures-<figure>, and prints the time from the change to the gateway accepting a route
// that gives green everything.
func measureToGreen(t *testing.T, figure string, bg blueGreen) {
	ns, name := "bg-figures-"+figure, "fig"
	setUp(t, ns, name, policySpec(bg, true))
	routes := recordRoute(t, ns, name)
	blue, rev1 := firstRevision(t, ns, name)
	firstServed(t, routes, blue, rev1)
	req := startRequests(t, gatewayURL())

	change := newVersion(t, ns, name, "2")
	green := waitGreen(t, ns, name, blue)
	step, interval := orDefault(bg.stepPercent, 20), orDefault(bg.intervalSeconds, 30)
	steps := time.Duration((100+step-1)/step) * time.Duration(interval) * time.Second
	full := waitAccepted(t, routes, weightsFor(blue, green, 100), change, firstRevisionTimeout+steps)
	waitRetired(t, ns, name, green, rev1, time.Duration(bg.retireAfterSeconds)*time.Second+timeout)
	req.Close()
	all := req.All()
	logSteps(t, "bluegreen-figures-"+figure, green, checkSteps(t, routes, req, change, time.Now()))
	t.Log(chaos.FigureLine("bluegreen", "step", step, "interval", time.Duration(interval)*time.Second,
		"change_to_100pct", full.Sub(change), "requests", len(all), "failed", count(all).failed))
	expectNoFailures(t, routes, all)
}

// orDefault is v, or def when v is 0 (unset in the policy).
func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}
