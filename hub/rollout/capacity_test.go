package rollout

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestPlanCapacity(t *testing.T) {
	in := func(dir CapacityDirection, weight, greenTarget, greenRunning, blueTarget, blueRunning int32) CapacityInput {
		return CapacityInput{Direction: dir, SurgePercent: 20, StepPercent: 20, GreenWeight: weight,
			Green: ColorCapacity{Target: greenTarget, Running: greenRunning}, Blue: ColorCapacity{Target: blueTarget, Running: blueRunning}}
	}
	late := func(in CapacityInput) CapacityInput { in.DeadlinePassed = true; return in }
	steps := func(in CapacityInput, step int32) CapacityInput { in.StepPercent = step; return in }
	tests := []struct {
		name string
		in   CapacityInput
		want CapacityStep
	}{
		{name: "start: green gets the surge, no traffic yet", in: in(CapacityForward, 0, 0, 0, 100, 100),
			want: CapacityStep{Direction: CapacityForward, Green: 20, Blue: 100, Wait: CapacityWaitRunning}},
		{name: "green runs its surge: the traffic moves one step", in: in(CapacityForward, 0, 20, 20, 100, 100),
			want: CapacityStep{Direction: CapacityForward, Green: 20, Blue: 100, GreenWeight: 20}},
		{name: "blue shrinks behind the weight the gateway serves, green grows into the room", in: in(CapacityForward, 20, 20, 20, 100, 100),
			want: CapacityStep{Direction: CapacityForward, Green: 20, Blue: 80, GreenWeight: 20, Wait: CapacityWaitBound}},
		{name: "then green one step ahead again", in: in(CapacityForward, 20, 20, 20, 80, 80),
			want: CapacityStep{Direction: CapacityForward, Green: 40, Blue: 80, GreenWeight: 20, Wait: CapacityWaitRunning}},
		{name: "green partly up: the traffic follows what runs", in: in(CapacityForward, 20, 40, 30, 80, 80),
			want: CapacityStep{Direction: CapacityForward, Green: 40, Blue: 80, GreenWeight: 30}},
		{name: "step larger than the surge moves one surge at most", in: steps(in(CapacityForward, 20, 40, 40, 80, 80), 50),
			want: CapacityStep{Direction: CapacityForward, Green: 40, Blue: 80, GreenWeight: 40}},
		{name: "last step", in: in(CapacityForward, 80, 100, 100, 20, 20),
			want: CapacityStep{Direction: CapacityForward, Green: 100, Blue: 20, GreenWeight: 100}},
		{name: "done", in: in(CapacityForward, 100, 100, 100, 20, 20),
			want: CapacityStep{Direction: CapacityForward, Green: 100, Blue: 0, GreenWeight: 100, Done: true}},
		{name: "green stuck past the deadline: undo, blue grows first", in: late(in(CapacityForward, 40, 60, 40, 60, 60)),
			want: CapacityStep{Direction: CapacityUndo, Green: 40, Blue: 60, GreenWeight: 40, Wait: CapacityWaitBound}},
		{name: "green moving before the deadline is not undone", in: late(in(CapacityForward, 40, 60, 60, 60, 60)),
			want: CapacityStep{Direction: CapacityForward, Green: 60, Blue: 60, GreenWeight: 60}},
		{name: "undo: green shrinks behind the weight", in: in(CapacityUndo, 40, 60, 60, 60, 60),
			want: CapacityStep{Direction: CapacityUndo, Green: 40, Blue: 60, GreenWeight: 40, Wait: CapacityWaitBound}},
		{name: "undo: blue grows into the room", in: in(CapacityUndo, 40, 40, 40, 60, 60),
			want: CapacityStep{Direction: CapacityUndo, Green: 40, Blue: 80, GreenWeight: 40, Wait: CapacityWaitRunning}},
		{name: "undo: blue runs, the traffic goes back", in: in(CapacityUndo, 40, 40, 40, 80, 80),
			want: CapacityStep{Direction: CapacityUndo, Green: 40, Blue: 80, GreenWeight: 20}},
		{name: "undo done", in: in(CapacityUndo, 0, 20, 20, 100, 100),
			want: CapacityStep{Direction: CapacityUndo, Green: 0, Blue: 100, Done: true}},
		{name: "undo stuck past the deadline: revert", in: late(in(CapacityUndo, 40, 40, 40, 80, 60)),
			want: CapacityStep{Direction: CapacityRevert, Green: 20, Blue: 100, Wait: CapacityWaitBlue,
				Overloads: []Overload{{Color: fleetv1alpha1.ColorBlue, Traffic: 100, Capacity: 60}}}},
		{name: "revert: all traffic to blue at once, the overload said", in: in(CapacityRevert, 60, 80, 80, 40, 40),
			want: CapacityStep{Direction: CapacityRevert, Green: 20, Blue: 100, Wait: CapacityWaitBlue,
				Overloads: []Overload{{Color: fleetv1alpha1.ColorBlue, Traffic: 100, Capacity: 40}}}},
		{name: "revert done: green leaves", in: in(CapacityRevert, 0, 20, 20, 100, 100),
			want: CapacityStep{Direction: CapacityRevert, Green: 0, Blue: 100, Done: true}},
		{name: "green crashed under its weight: the overload is said", in: in(CapacityForward, 40, 60, 10, 60, 60),
			want: CapacityStep{Direction: CapacityForward, Green: 60, Blue: 60, GreenWeight: 40, Wait: CapacityWaitRunning,
				Overloads: []Overload{{Color: fleetv1alpha1.ColorGreen, Traffic: 40, Capacity: 10}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanCapacity(tt.in)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(CapacityStep{}, "Message")); diff != "" {
				t.Errorf("PlanCapacity (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
		})
	}
}

func TestPlanCapacityMessage(t *testing.T) {
	got := PlanCapacity(CapacityInput{Direction: CapacityRevert, SurgePercent: 10, StepPercent: 10, GreenWeight: 70,
		Green: ColorCapacity{Target: 80, Running: 80}, Blue: ColorCapacity{Target: 30, Running: 30}})
	if want := "reverted: blue serves 100% of the traffic on 30% of its capacity while it grows back"; got.Message != want {
		t.Errorf("Message = %q, want %q", got.Message, want)
	}
	got = PlanCapacity(CapacityInput{Direction: CapacityForward, SurgePercent: 20, StepPercent: 20, GreenWeight: 40,
		Green: ColorCapacity{Target: 60, Running: 10}, Blue: ColorCapacity{Target: 60, Running: 60}})
	if want := "green 40% of the traffic; capacity green 60%, blue 60%; paused until green runs more of its 60%; green serves 40% of the traffic on 10% of its capacity"; got.Message != want {
		t.Errorf("Message = %q, want %q", got.Message, want)
	}
}

// capSim carries out capacity steps on worker groups as an executor would: replicas that go
// down go at once; those that go up start one per decision when slow, all at once otherwise.
type capSim struct {
	surge, step int32
	groups      []int32
	slow        bool
	in          CapacityInput
	held        []GroupReplicas
}

func newCapSim(surge, step int32, groups []int32, slow bool) *capSim {
	s := &capSim{surge: surge, step: step, groups: groups, slow: slow,
		in: CapacityInput{Direction: CapacityForward, SurgePercent: surge, StepPercent: step,
			Blue: ColorCapacity{Target: 100, Running: 100}}}
	for _, n := range groups {
		s.held = append(s.held, GroupReplicas{Blue: n})
	}
	return s
}

func (s *capSim) clone(dir CapacityDirection) *capSim {
	c := *s
	c.held = append([]GroupReplicas(nil), s.held...)
	c.in.Direction = dir
	return &c
}

func (s *capSim) String() string {
	return fmt.Sprintf("surge %d step %d groups %v: %+v held %v", s.surge, s.step, s.groups, s.in, s.held)
}

// next decides once, checks the bounds and the traffic against what runs, and carries it out.
func (s *capSim) next(t *testing.T) CapacityStep {
	t.Helper()
	in := s.in
	st := PlanCapacity(in)
	bound := 100 + s.surge
	if st.Green+st.Blue > bound {
		t.Fatalf("%v: targets %d+%d over %d", s, st.Green, st.Blue, bound)
	}
	if st.Direction != CapacityRevert && max(in.Green.Target, st.Green)+max(in.Blue.Target, st.Blue) > bound {
		t.Fatalf("%v: moving to %+v passes %d", s, st, bound)
	}
	if st.GreenWeight > in.GreenWeight && st.GreenWeight > in.Green.Running {
		t.Fatalf("%v: weight %d onto green running %d", s, st.GreenWeight, in.Green.Running)
	}
	if st.GreenWeight < in.GreenWeight && st.Direction != CapacityRevert && 100-st.GreenWeight > in.Blue.Running {
		t.Fatalf("%v: weight %d back onto blue running %d", s, st.GreenWeight, in.Blue.Running)
	}
	if st.Direction != CapacityRevert && len(st.Overloads) > 0 {
		t.Fatalf("%v: overload %+v", s, st.Overloads)
	}
	var green, blue []GroupRunning
	for i, n := range s.groups {
		limit := n + SurgeReplicas(n, s.surge)
		want := Replicas(n, s.surge, st, s.held[i])
		h := s.held[i]
		if want.Green+want.Blue > limit || max(h.Green, want.Green)+max(h.Blue, want.Blue) > limit {
			t.Fatalf("%v: group %d from %v to %v passes %d replicas", s, n, h, want, limit)
		}
		s.held[i] = GroupReplicas{Green: s.towards(h.Green, want.Green), Blue: s.towards(h.Blue, want.Blue)}
		green = append(green, GroupRunning{Full: n, Running: s.held[i].Green})
		blue = append(blue, GroupRunning{Full: n, Running: s.held[i].Blue})
	}
	s.in = CapacityInput{Direction: st.Direction, SurgePercent: s.surge, StepPercent: s.step, GreenWeight: st.GreenWeight,
		Green: ColorCapacity{Target: st.Green, Running: RunningShare(green)}, Blue: ColorCapacity{Target: st.Blue, Running: RunningShare(blue)}}
	return st
}

func (s *capSim) towards(held, want int32) int32 {
	if s.slow && want > held {
		return held + 1
	}
	return want
}

// run decides until done, returning every state it passed through.
func (s *capSim) run(t *testing.T) ([]*capSim, CapacityStep) {
	t.Helper()
	var states []*capSim
	for range 5000 {
		states = append(states, s.clone(s.in.Direction))
		if st := s.next(t); st.Done {
			return states, st
		}
	}
	t.Fatalf("%v: not done after 5000 decisions", s)
	return nil, CapacityStep{}
}

var capCases = []struct {
	surge, step int32
	groups      []int32
}{
	{20, 20, []int32{4}},
	{25, 25, []int32{1}},
	{10, 20, []int32{2}},
	{20, 10, []int32{3}},
	{1, 1, []int32{64}},
	{1, 100, []int32{7, 64}},
	{50, 100, []int32{1, 3, 10}},
	{100, 100, []int32{5}},
	{10, 25, []int32{3, 7, 11}},
}

func TestCapacityForwardUndoRevert(t *testing.T) {
	for _, c := range capCases {
		for _, slow := range []bool{false, true} {
			t.Run(fmt.Sprintf("surge%d-step%d-%v-slow%v", c.surge, c.step, c.groups, slow), func(t *testing.T) {
				states, last := newCapSim(c.surge, c.step, c.groups, slow).run(t)
				if last.GreenWeight != 100 || last.Green != 100 || last.Blue != 0 {
					t.Fatalf("forward ended at %+v", last)
				}
				t.Logf("forward in %d decisions", len(states))
				for _, s := range states {
					if _, back := s.clone(CapacityUndo).run(t); back.GreenWeight != 0 || back.Blue != 100 || back.Green != 0 || back.Direction != CapacityUndo {
						t.Fatalf("%v: undo ended at %+v", s, back)
					}
					r := s.clone(CapacityRevert)
					first := r.next(t)
					if first.GreenWeight != 0 || first.Blue != 100 {
						t.Fatalf("%v: revert began with %+v", s, first)
					}
					if s.in.Blue.Running < 100 && (len(first.Overloads) != 1 || first.Overloads[0].Capacity != s.in.Blue.Running) {
						t.Fatalf("%v: revert overload %+v", s, first.Overloads)
					}
					if _, back := r.run(t); back.Green != 0 || back.Blue != 100 {
						t.Fatalf("%v: revert ended at %+v", s, back)
					}
				}
			})
		}
	}
}

// TestCapacityRestart feeds each step back as the binding would, with nothing reported changed:
// within a few decisions the state stops changing, the step then says why it waits, and
// deciding again gives the same step.
func TestCapacityRestart(t *testing.T) {
	for _, c := range capCases {
		states, _ := newCapSim(c.surge, c.step, c.groups, true).run(t)
		for _, s := range states {
			for _, dir := range []CapacityDirection{CapacityForward, CapacityUndo, CapacityRevert} {
				in := s.clone(dir).in
				settled := false
				for range 8 {
					st := PlanCapacity(in)
					again := in
					again.Direction, again.GreenWeight, again.Green.Target, again.Blue.Target = st.Direction, st.GreenWeight, st.Green, st.Blue
					if again == in {
						if st.Wait == "" && !st.Done {
							t.Fatalf("%v %s: settled at %+v without a reason", s, dir, st)
						}
						if diff := cmp.Diff(st, PlanCapacity(again)); diff != "" {
							t.Fatalf("%v %s: the same state decided twice (-first +second):\n%s", s, dir, diff)
						}
						settled = true
						break
					}
					in = again
				}
				if !settled {
					t.Fatalf("%v %s: still changing after 8 decisions with nothing reported", s, dir)
				}
			}
		}
	}
}

func TestCapacityReplicas(t *testing.T) {
	surges := []int32{1, 10, 25, 50, 100}
	for n := int32(1); n <= 64; n++ {
		for _, surge := range surges {
			limit := n + SurgeReplicas(n, surge)
			for g := int32(0); g <= 100; g++ {
				for b := int32(0); b <= 100; b++ {
					for _, dir := range []CapacityDirection{CapacityForward, CapacityUndo, CapacityRevert} {
						st := CapacityStep{Direction: dir, Green: g, Blue: b}
						for _, held := range []GroupReplicas{{}, {Green: n, Blue: n}, {Green: CarryReplicas(n, g), Blue: CarryReplicas(n, b)}, {Green: n - n/3, Blue: n/3 + 1}} {
							r := Replicas(n, surge, st, held)
							if r.Green+r.Blue > limit || r.Green < 0 || r.Blue < 0 || r.Green > n || r.Blue > n {
								t.Fatalf("n %d surge %d %+v held %v: %v, limit %d", n, surge, st, held, r, limit)
							}
							if held.Green+held.Blue <= limit && max(held.Green, r.Green)+max(held.Blue, r.Blue) > limit {
								t.Fatalf("n %d surge %d %+v: from %v to %v passes %d", n, surge, st, held, r, limit)
							}
						}
					}
				}
			}
			// Progress: with the other colour down to what it carries, the growing colour can
			// always run more than the share it carries, either way.
			for w := int32(0); w < 100; w++ {
				fwd := CapacityStep{Direction: CapacityForward, Green: min(100, w+surge), Blue: 100 - w}
				r := Replicas(n, surge, fwd, GroupReplicas{Green: CarryReplicas(n, w), Blue: CarryReplicas(n, 100-w)})
				if share := RunningShare([]GroupRunning{{Full: n, Running: r.Green}}); share <= w {
					t.Fatalf("n %d surge %d: green carrying %d%% can run only %d%% (%v)", n, surge, w, share, r)
				}
				undo := CapacityStep{Direction: CapacityUndo, Green: 100 - w, Blue: min(100, w+surge)}
				r = Replicas(n, surge, undo, GroupReplicas{Green: CarryReplicas(n, 100-w), Blue: CarryReplicas(n, w)})
				if share := RunningShare([]GroupRunning{{Full: n, Running: r.Blue}}); share <= w {
					t.Fatalf("n %d surge %d: blue carrying %d%% can run only %d%% (%v)", n, surge, w, share, r)
				}
			}
		}
	}
}

func TestCapacityRunningShare(t *testing.T) {
	tests := []struct {
		name   string
		groups []GroupRunning
		want   int32
	}{
		{name: "no group", want: 0},
		{name: "all running", groups: []GroupRunning{{Full: 4, Running: 4}}, want: 100},
		{name: "one of three carries 34%", groups: []GroupRunning{{Full: 3, Running: 1}}, want: 34},
		{name: "the least group", groups: []GroupRunning{{Full: 10, Running: 9}, {Full: 2, Running: 1}}, want: 50},
		{name: "none running", groups: []GroupRunning{{Full: 10, Running: 0}, {Full: 2, Running: 2}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RunningShare(tt.groups); got != tt.want {
				t.Errorf("RunningShare = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCapacityWorkerGroupLimit(t *testing.T) {
	full := WorkerGroupSize{Replicas: 4, MinReplicas: 2, MaxReplicas: 8}
	if got, want := full.Limit(3), (WorkerGroupSize{Replicas: 3, MinReplicas: 2, MaxReplicas: 3}); got != want {
		t.Errorf("Limit(3) = %+v, want %+v", got, want)
	}
	if got, want := full.Limit(1), (WorkerGroupSize{Replicas: 1, MinReplicas: 1, MaxReplicas: 1}); got != want {
		t.Errorf("Limit(1) = %+v, want %+v", got, want)
	}
}
