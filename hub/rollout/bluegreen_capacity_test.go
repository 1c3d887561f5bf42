package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// checkCapacity checks what every capacity-following decision keeps: the Decision carries the
// targets the status records; moving forward or undoing, the targets stay within the bound
// together and beside either colour's previous target; the traffic moves onto a colour only as
// far as that colour runs. A revert gives blue everything at once, so it is checked apart.
func checkCapacity(t *testing.T, strategy Strategy, prev *fleetv1alpha1.RolloutStatus, in Input, d Decision) {
	t.Helper()
	bg := d.Status.BlueGreen
	if bg == nil || bg.Capacity == nil {
		if d.Capacity != nil {
			t.Errorf("Decision.Capacity %+v without capacity in the status", *d.Capacity)
		}
		return
	}
	c := bg.Capacity
	if d.Capacity == nil || *d.Capacity != (CapacityTargets{Direction: c.Direction, Green: c.Green, Blue: c.Blue}) {
		t.Errorf("Decision.Capacity %v, status %+v", d.Capacity, *c)
	}
	if c.Direction == fleetv1alpha1.CapacityRevert {
		if bg.GreenPercent != 0 || c.Blue != 100 {
			t.Errorf("a revert gives blue %d%% of the traffic and %d%% of its set, want 100 and 100", 100-bg.GreenPercent, c.Blue)
		}
		return
	}
	if bg.Step == fleetv1alpha1.BlueGreenDeploying && in.Target != prev.TargetRevision {
		return // a new green: blue takes the traffic back at once, as after a revert
	}
	limit := 100 + strategy.BlueGreen.Surge
	if c.Green+c.Blue > limit {
		t.Errorf("targets green %d%% + blue %d%% exceed %d%%", c.Green, c.Blue, limit)
	}
	var was int32
	if p := prev.BlueGreen; p != nil {
		was = p.GreenPercent
		if pc := p.Capacity; pc != nil && pc.Direction != fleetv1alpha1.CapacityRevert && (c.Green+pc.Blue > limit || pc.Green+c.Blue > limit) {
			t.Errorf("targets green %d%%, blue %d%% after %d%%, %d%% exceed %d%% while they move", c.Green, c.Blue, pc.Green, pc.Blue, limit)
		}
	}
	if bg.GreenPercent > was && bg.GreenPercent > in.BlueGreen.GreenRunning {
		t.Errorf("green given %d%% of the traffic on %d%% of its set", bg.GreenPercent, in.BlueGreen.GreenRunning)
	}
	if bg.GreenPercent < was && 100-bg.GreenPercent > in.BlueGreen.BlueRunning {
		t.Errorf("blue given %d%% of the traffic back on %d%% of its set", 100-bg.GreenPercent, in.BlueGreen.BlueRunning)
	}
}

// capStrategy is bgStrategy's with capacity following and a 25% surge.
func capStrategy(mod func(*Strategy)) Strategy {
	s, _ := bgStrategy(true, func(s *Strategy) {
		s.BlueGreen.Capacity, s.BlueGreen.Surge = true, 25
		if mod != nil {
			mod(s)
		}
	})
	return s
}

func TestBlueGreenCapacity(t *testing.T) {
	us := func() *clusterWrapper { return c("us", "r1").done().ep(2) }
	ap := func() *clusterWrapper { return c("ap", "r2").done() }
	both := func() []*clusterWrapper { return []*clusterWrapper{us(), ap()} }
	// at is a step of the tables below: the colours' running shares and the gateway accepting.
	step := func(at int, green, blue int32, want string) bgStep {
		return bgStep{at: at, clusters: both(), greenRunning: green, blueRunning: blue, accepted: true, want: want}
	}
	// forward moves all of the traffic with shares that lag their targets: green starts at the
	// surge, grows one step ahead of the weight the gateway serves, and the weight moves only
	// once the interval is over and only onto what green runs.
	forward := []bgStep{
		{at: 0, clusters: []*clusterWrapper{us(), c("ap", "")}, green: []string{"ap"}, blueRunning: 100,
			want: "Progressing Deploying 0% acc=false cap=Forward/25/100 | apply ap=r2 us=r1 | leave - | shift False/GreenDeploying | ev GreenStarted"},
		{at: 5, clusters: both(), blueRunning: 100, accepted: true, says: "paused until green runs more of its 25%",
			want: "Progressing Deploying 0% acc=false cap=Forward/25/100 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev -"},
		step(6, 25, 100, "Progressing Shifting 25% acc=false cap=Forward/25/100 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"),
		step(7, 25, 100, "Progressing Shifting 25% acc=true cap=Forward/25/75 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
		step(8, 25, 75, "Progressing Shifting 25% acc=true cap=Forward/50/75 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
		step(17, 25, 75, "Progressing Shifting 25% acc=true cap=Forward/50/75 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev -"),
		step(18, 50, 75, "Progressing Shifting 50% acc=false cap=Forward/50/75 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"),
		step(19, 50, 75, "Progressing Shifting 50% acc=true cap=Forward/50/50 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
		step(20, 50, 50, "Progressing Shifting 50% acc=true cap=Forward/75/50 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
		step(29, 75, 50, "Progressing Shifting 75% acc=false cap=Forward/75/50 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"),
		step(30, 75, 50, "Progressing Shifting 75% acc=true cap=Forward/75/25 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
		step(31, 75, 25, "Progressing Shifting 75% acc=true cap=Forward/100/25 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
		step(40, 100, 25, "Progressing Holding 100% acc=false cap=Forward/100/25 | apply ap=r2 us=r1 | leave - | shift False/Shifted | ev TrafficShifted"),
		step(41, 100, 25, "Progressing Holding 100% acc=true cap=Forward/100/0 | apply ap=r2 us=r1 | leave - | shift False/Shifted | ev -"),
		step(101, 100, 0, "Complete | apply ap=r2 | leave us=Retired | shift False/Shifted | ev BlueRetired,RolloutComplete"),
	}
	tests := []struct {
		name  string
		mod   func(*Strategy)
		steps []bgStep
	}{
		{name: "forward, the shares lagging", steps: forward},
		{
			name: "undo at 25%: blue grows back first, then takes the traffic, then green leaves",
			steps: append(slices.Clone(forward[:5]),
				bgStep{at: 9, target: "r1", clusters: both(), greenRunning: 25, blueRunning: 75, accepted: true,
					want: "Progressing Shifting 25% acc=true cap=Undo/25/75 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev TrafficShifted"},
				bgStep{at: 10, target: "r1", clusters: both(), greenRunning: 25, blueRunning: 75, accepted: true,
					want: "Progressing Shifting 25% acc=true cap=Undo/25/100 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev -"},
				bgStep{at: 11, target: "r1", clusters: both(), greenRunning: 25, blueRunning: 100, accepted: true,
					want: "Progressing Shifting 0% acc=false cap=Undo/25/100 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"},
				bgStep{at: 12, target: "r1", clusters: both(), greenRunning: 25, blueRunning: 100,
					want: "Progressing Shifting 0% acc=false cap=Undo/25/100 | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				bgStep{at: 13, target: "r1", clusters: both(), greenRunning: 25, blueRunning: 100, accepted: true,
					want: "Complete | apply us=r1 | leave ap=RolledBack | shift False/ShiftReverted | ev TrafficReverted,RolloutComplete"},
			),
		},
		{
			name: "green failing at 50%: all of the traffic back on blue at once, the overload said, green leaves once blue runs",
			steps: append(slices.Clone(forward[:9]),
				bgStep{at: 25, clusters: []*clusterWrapper{us(), ap().notReady()}, greenRunning: 75, blueRunning: 50, accepted: true,
					want: "Progressing Shifting 50% acc=false cap=Forward/75/50 | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				bgStep{at: 119, clusters: []*clusterWrapper{us(), ap().notReady()}, greenRunning: 75, blueRunning: 50,
					says: "blue serves 100% of the traffic on 50% of its capacity while it grows back",
					want: "RollingBack Shifting 0% acc=false cap=Revert/25/100 | apply ap=r2 us=r1 | leave - | shift False/ShiftReverted | ev TrafficReverted"},
				bgStep{at: 120, clusters: []*clusterWrapper{us(), ap().notReady()}, greenRunning: 25, blueRunning: 75,
					want: "RollingBack Shifting 0% acc=false cap=Revert/25/100 | apply ap=r2 us=r1 | leave - | shift False/ShiftReverted | ev -"},
				bgStep{at: 121, clusters: []*clusterWrapper{us(), ap().notReady()}, greenRunning: 25, blueRunning: 100,
					want: "Complete | apply us=r1 | leave ap=RolledBack | shift False/ShiftReverted | ev TrafficReverted"},
			),
		},
		{
			name: "green unable to grow: paused with a condition, past the deadline undone step by step, the revision failed",
			steps: append(slices.Clone(forward[:9]),
				step(29, 50, 50, "Progressing Shifting 50% acc=true cap=Forward/75/50 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev -"),
				step(118, 50, 50, "Progressing Shifting 50% acc=true cap=Forward/75/50 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev -"),
				step(119, 50, 50, "Progressing Shifting 50% acc=true cap=Undo/50/50 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev RolloutStalled"),
				step(120, 50, 50, "Progressing Shifting 50% acc=true cap=Undo/50/75 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev -"),
				step(121, 50, 75, "Progressing Shifting 25% acc=false cap=Undo/50/75 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"),
				step(122, 50, 75, "Progressing Shifting 25% acc=true cap=Undo/25/75 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev -"),
				step(123, 25, 75, "Progressing Shifting 25% acc=true cap=Undo/25/100 | apply ap=r2 us=r1 | leave - | shift True/CapacityWaiting | ev -"),
				step(124, 25, 100, "Progressing Shifting 0% acc=false cap=Undo/25/100 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"),
				step(125, 25, 100, "Complete | apply us=r1 | leave ap=RolledBack | shift False/ShiftReverted | ev TrafficReverted"),
			),
		},
	}
	tests = append(tests, []struct {
		name  string
		mod   func(*Strategy)
		steps []bgStep
	}{
		{
			name: "a newer revision at 25%: the traffic back on blue at once, the overload said, green deploys again at the surge",
			steps: append(slices.Clone(forward[:5]),
				bgStep{at: 9, target: "r3", clusters: both(), greenRunning: 25, blueRunning: 75, accepted: true,
					says: "blue serves all of it on 75% of its capacity while it grows back",
					want: "Progressing Deploying 0% acc=false cap=Forward/25/100 | apply ap=r3 us=r1 | leave - | shift False/GreenDeploying | ev GreenStarted"},
			),
		},
		{
			name: "promote approval: green's capacity is ready, the last share waits for it",
			mod:  func(s *Strategy) { s.BlueGreen.Approval, s.BlueGreen.Step = true, 25 },
			steps: []bgStep{
				{at: 0, clusters: both(), green: []string{"ap"}, greenRunning: 25, blueRunning: 100, accepted: true, approval: "r2/shift",
					want: "Progressing Shifting 25% acc=false cap=Forward/25/100 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev GreenStarted,TrafficShifted"},
				step(1, 25, 100, "Progressing Shifting 25% acc=true cap=Forward/25/75 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
				step(2, 25, 75, "Progressing Shifting 25% acc=true cap=Forward/50/75 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
				step(11, 50, 75, "Progressing Shifting 50% acc=false cap=Forward/50/75 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"),
				step(12, 50, 75, "Progressing Shifting 50% acc=true cap=Forward/50/50 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
				step(13, 50, 50, "Progressing Shifting 50% acc=true cap=Forward/75/50 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
				step(22, 75, 50, "Progressing Shifting 75% acc=false cap=Forward/75/50 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"),
				step(23, 75, 50, "Progressing Shifting 75% acc=true cap=Forward/75/25 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
				step(24, 75, 25, "Progressing Shifting 75% acc=true cap=Forward/100/25 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"),
				step(33, 100, 25, "AwaitingApproval Shifting 75% acc=true cap=Forward/100/25 | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev AwaitingApproval"),
				{at: 34, clusters: both(), greenRunning: 100, blueRunning: 25, accepted: true, approval: "r2/promote",
					want: "Progressing Holding 100% acc=false cap=Forward/100/25 | apply ap=r2 us=r1 | leave - | shift False/Shifted | ev TrafficShifted"},
			},
		},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runBlueGreen(t, capStrategy(tt.mod), true, tt.steps)
		})
	}
}

// capWorld plays a capacity-following rollout against an executor that has carried out each
// decision by the next one: each colour runs its capacity target, the gateway accepted the
// share. Time moves on to each decision's requeue.
type capWorld struct {
	strategy                  Strategy
	now                       int
	target                    string
	prev                      *fleetv1alpha1.RolloutStatus
	greenRunning, blueRunning int32
	greenDown                 bool
}

func newCapWorld(s Strategy) capWorld {
	return capWorld{strategy: s, target: "r2", blueRunning: 100,
		prev: &fleetv1alpha1.RolloutStatus{GoodRevision: "r1", TargetRevision: "r1", Phase: fleetv1alpha1.RolloutComplete}}
}

// decide takes one decision, checks it (and that a restarted hub takes the same) and carries
// it out.
func (w *capWorld) decide(t *testing.T) Decision {
	t.Helper()
	green := c("ap", "r2").done()
	if w.greenDown {
		green = green.notReady()
	}
	in := Input{Now: at(w.now), Strategy: w.strategy, Target: w.target, Previous: w.prev,
		Clusters: cs(c("us", "r1").done().ep(2), green),
		BlueGreen: BlueGreenInput{Blue: []string{"us"}, Green: []string{"ap"}, Traffic: true, Accepted: true,
			GreenRunning: w.greenRunning, BlueRunning: w.blueRunning}}
	d := Plan(in)
	checkCapacity(t, w.strategy, w.prev, in, d)
	in.Previous = roundTrip(t, w.prev)
	if again := Plan(in); bgSummary(again) != bgSummary(d) || !cmp.Equal(again.Capacity, d.Capacity) {
		t.Errorf("t=%d after a restart: %s, want %s", w.now, bgSummary(again), bgSummary(d))
	}
	w.prev = roundTrip(t, &d.Status)
	if d.Capacity != nil {
		w.greenRunning, w.blueRunning = d.Capacity.Green, d.Capacity.Blue
	}
	w.now += max(1, int(d.RequeueAfter/time.Second))
	return d
}

// run decides until no BlueGreen rollout is in flight, and returns the decisions.
func (w *capWorld) run(t *testing.T) []Decision {
	t.Helper()
	var out []Decision
	for range 200 {
		d := w.decide(t)
		out = append(out, d)
		if d.Status.BlueGreen == nil {
			return out
		}
	}
	t.Fatalf("still in flight after 200 decisions: %s", bgSummary(out[len(out)-1]))
	return nil
}

func TestBlueGreenCapacityFromEveryStep(t *testing.T) {
	for _, sc := range []struct{ surge, step int32 }{{25, 25}, {25, 20}, {10, 50}, {100, 100}, {5, 3}} {
		t.Run(fmt.Sprintf("surge %d step %d", sc.surge, sc.step), func(t *testing.T) {
			s := capStrategy(func(s *Strategy) { s.BlueGreen.Surge, s.BlueGreen.Step = sc.surge, sc.step })
			w := newCapWorld(s)
			var states []capWorld
			var weights []int32
			for {
				states = append(states, w)
				d := w.decide(t)
				if d.Status.BlueGreen == nil {
					if got := bgSummary(d); got != "Complete | apply ap=r2 | leave us=Retired | shift False/Shifted | ev BlueRetired,RolloutComplete" {
						t.Fatalf("forward ends with %s", got)
					}
					break
				}
				if n := len(weights); n == 0 || weights[n-1] != d.Status.BlueGreen.GreenPercent {
					weights = append(weights, d.Status.BlueGreen.GreenPercent)
				}
				if len(states) > 400 {
					t.Fatalf("forward still in flight: %s", bgSummary(d))
				}
			}
			if !slices.IsSorted(weights) || weights[len(weights)-1] != 100 {
				t.Errorf("green's weights %v, want them growing to 100", weights)
			}
			// states[0] starts the rollout; from each later one, undo and revert.
			for i, from := range states[1:] {
				undo := from
				undo.target = "r1"
				ds := undo.run(t)
				last := ds[len(ds)-1]
				weight := from.prev.BlueGreen.GreenPercent
				for _, d := range ds {
					if c := d.Capacity; c != nil && c.Direction != fleetv1alpha1.CapacityUndo {
						t.Fatalf("undo from step %d: %s, want every step back an Undo", i+1, bgSummary(d))
					}
					if bg := d.Status.BlueGreen; bg != nil {
						if bg.GreenPercent > weight {
							t.Fatalf("undo from step %d gives green more: %s", i+1, bgSummary(d))
						}
						weight = bg.GreenPercent
					}
				}
				if got := bgSummary(last); !strings.HasPrefix(got, "Complete | apply us=r1 | leave ap=RolledBack") || last.Status.FailedRevision != "" || undo.blueRunning != 100 {
					t.Errorf("undo from step %d ends with %s, failed %q, blue running %d%%", i+1, got, last.Status.FailedRevision, undo.blueRunning)
				}

				revert := from
				revert.greenDown = true
				ds = revert.run(t)
				last = ds[len(ds)-1]
				if got := bgSummary(last); !strings.HasPrefix(got, "Complete | apply us=r1 | leave ap=RolledBack") || last.Status.FailedRevision != "r2" {
					t.Errorf("revert from step %d ends with %s, failed %q", i+1, got, last.Status.FailedRevision)
				}
				// Green that took traffic from a blue that shrank reverts through Revert steps; one
				// still deploying, or beside a whole blue, just leaves.
				reverted := from.prev.BlueGreen.Step == fleetv1alpha1.BlueGreenDeploying || from.blueRunning >= 100
				for _, d := range ds {
					c := d.Capacity
					if c == nil || c.Direction != fleetv1alpha1.CapacityRevert {
						continue
					}
					if from.blueRunning < 100 && !strings.Contains(d.TrafficShifting.Message, "blue serves 100% of the traffic on") {
						t.Errorf("revert from step %d does not state blue's overload: %s", i+1, d.TrafficShifting.Message)
					}
					reverted = true
					break
				}
				if !reverted {
					t.Errorf("revert from step %d (%s) took no Revert step", i+1, from.prev.BlueGreen.Step)
				}
			}
		})
	}
}

// TestBlueGreenCapacityOff: without capacity following (not asked for, or no traffic for it to
// follow) the running shares change nothing and the decisions are those of a plain BlueGreen.
func TestBlueGreenCapacityOff(t *testing.T) {
	tests := []struct {
		name    string
		s       Strategy
		traffic bool
	}{
		{name: "not asked for", s: capStrategy(func(s *Strategy) { s.BlueGreen.Capacity = false }), traffic: true},
		{name: "no traffic to follow", s: capStrategy(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain, _ := bgStrategy(tt.traffic, nil)
			prev := &fleetv1alpha1.RolloutStatus{GoodRevision: "r1", TargetRevision: "r1", Phase: fleetv1alpha1.RolloutComplete}
			plainPrev := prev
			for _, sec := range []int{0, 5, 8, 10, 20, 21, 31, 32, 42, 43, 103} {
				green := c("ap", "r2")
				if sec >= 5 {
					green = green.done()
				}
				in := Input{Now: at(sec), Strategy: tt.s, Target: "r2", Previous: prev, Clusters: cs(c("us", "r1").done().ep(2), green),
					BlueGreen: BlueGreenInput{Blue: []string{"us"}, Green: []string{"ap"}, Traffic: tt.traffic, Accepted: true,
						GreenRunning: 37, BlueRunning: 81}}
				d := Plan(in)
				in.Strategy, in.Previous, in.BlueGreen.GreenRunning, in.BlueGreen.BlueRunning = plain, plainPrev, 0, 0
				want := Plan(in)
				if diff := cmp.Diff(want, d); diff != "" {
					t.Fatalf("t=%d (-plain +capacity):\n%s", sec, diff)
				}
				if d.Capacity != nil {
					t.Fatalf("t=%d: Capacity %+v", sec, *d.Capacity)
				}
				prev, plainPrev = roundTrip(t, &d.Status), roundTrip(t, &want.Status)
			}
			if prev.Phase != fleetv1alpha1.RolloutComplete || prev.GoodRevision != "r2" {
				t.Errorf("ends %s on %s, want Complete on r2", prev.Phase, prev.GoodRevision)
			}
		})
	}
}

// TestBlueGreenCapacityPolicyChanged: a policy that starts or stops capacity following while a
// rollout is in flight.
func TestBlueGreenCapacityPolicyChanged(t *testing.T) {
	inFlight := func(target string, c *fleetv1alpha1.BlueGreenCapacityStatus) *fleetv1alpha1.RolloutStatus {
		return &fleetv1alpha1.RolloutStatus{GoodRevision: "r1", TargetRevision: target, Phase: fleetv1alpha1.RolloutProgressing,
			BlueGreen: &fleetv1alpha1.BlueGreenStatus{Step: fleetv1alpha1.BlueGreenShifting, Blue: []string{"us"}, Green: []string{"ap"},
				GreenPercent: 50, Accepted: true, StepTime: mt(0), Capacity: c}}
	}
	plain, _ := bgStrategy(true, nil)
	tests := []struct {
		name     string
		strategy Strategy
		prev     *fleetv1alpha1.RolloutStatus
		target   string
		want     string
	}{
		{name: "turned on: both colours run their whole sets, the first step brings them within the bound", strategy: capStrategy(nil),
			prev: inFlight("r2", nil), target: "r2",
			want: "Progressing Shifting 50% acc=true cap=Forward/50/50 | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
		{name: "turned off going forward: the plain shift goes on", strategy: plain,
			prev: inFlight("r2", &fleetv1alpha1.BlueGreenCapacityStatus{Direction: fleetv1alpha1.CapacityForward, Green: 75, Blue: 50}), target: "r2",
			want: "Progressing Shifting 50% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
		{name: "turned off while undoing: the traffic back on blue at once", strategy: plain,
			prev: inFlight("r1", &fleetv1alpha1.BlueGreenCapacityStatus{Direction: fleetv1alpha1.CapacityUndo, Green: 50, Blue: 75}), target: "r1",
			want: "Complete | apply us=r1 | leave ap=RolledBack | shift False/ShiftReverted | ev TrafficReverted,RolloutComplete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(Input{Now: at(5), Strategy: tt.strategy, Target: tt.target, Previous: tt.prev,
				Clusters: cs(c("us", "r1").done().ep(2), c("ap", "r2").done()),
				BlueGreen: BlueGreenInput{Blue: []string{"us"}, Green: []string{"ap"}, Traffic: true, Accepted: true,
					GreenRunning: 100, BlueRunning: 100}})
			if got := bgSummary(d); got != tt.want {
				t.Errorf("got  %s\nwant %s\nmessage: %s", got, tt.want, d.Status.Message)
			}
		})
	}
}
