package rollout

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// bgStep is one decision of a BlueGreen scenario: the world at that moment and what the
// decision must say.
type bgStep struct {
	at       int
	target   string
	clusters []*clusterWrapper
	green    []string // the green set the hub chose, for a rollout that starts
	noGreen  string
	accepted bool
	paused   bool
	approval string
	// greenRunning and blueRunning are the colours' running shares (capacity following only).
	greenRunning, blueRunning int32
	// want summarizes the decision (see bgSummary).
	want string
	// says, when set, is text the TrafficShifting condition's message or an event must contain.
	says string
}

// bgStrategy is a BlueGreen strategy: 25% steps every 10s, retire after 60s, deadline 100s.
func bgStrategy(traffic bool, mod func(*Strategy)) (Strategy, bool) {
	s := Strategy{Type: fleetv1alpha1.RolloutBlueGreen, Deadline: seconds(100),
		BlueGreen: BlueGreen{Step: 25, Interval: seconds(10), RetireAfter: seconds(60)}}
	if mod != nil {
		mod(&s)
	}
	return s, traffic
}

// bgSummary renders the parts of a decision the tables check:
// "Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted".
func bgSummary(d Decision) string {
	step := string(d.Status.Phase)
	if bg := d.Status.BlueGreen; bg != nil {
		step += fmt.Sprintf(" %s %d%% acc=%t", bg.Step, bg.GreenPercent, bg.Accepted)
		if c := bg.Capacity; c != nil {
			step += fmt.Sprintf(" cap=%s/%d/%d", c.Direction, c.Green, c.Blue)
		}
	}
	var apply, leave, events []string
	for _, name := range slices.Sorted(maps.Keys(d.Apply)) {
		apply = append(apply, name+"="+d.Apply[name])
	}
	for _, name := range slices.Sorted(maps.Keys(d.Leave)) {
		leave = append(leave, name+"="+string(d.Leave[name]))
	}
	for _, e := range d.Events {
		events = append(events, e.Reason)
	}
	shift := "-"
	if d.TrafficShifting != nil {
		shift = string(d.TrafficShifting.Status) + "/" + d.TrafficShifting.Reason
	}
	return fmt.Sprintf("%s | apply %s | leave %s | shift %s | ev %s", step, strings.Join(apply, " "),
		orDash(leave), shift, orDash(events))
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

// runBlueGreen plays steps in order, feeding each decision's status back as the next input,
// and also checks that a hub restarted before each step (the status read back from the
// binding, to the second) decides the same.
func runBlueGreen(t *testing.T, strategy Strategy, traffic bool, steps []bgStep) {
	t.Helper()
	prev := &fleetv1alpha1.RolloutStatus{GoodRevision: "r1", TargetRevision: "r1", Phase: fleetv1alpha1.RolloutComplete}
	for i, st := range steps {
		target := st.target
		if target == "" {
			target = "r2"
		}
		blue, green := []string{}, st.green
		if prev.BlueGreen != nil {
			blue, green = prev.BlueGreen.Blue, prev.BlueGreen.Green
		} else {
			for _, c := range st.clusters {
				if !slices.Contains(st.green, c.Name) {
					blue = append(blue, c.Name)
				}
			}
		}
		in := Input{Now: at(st.at), Strategy: strategy, Target: target, Previous: prev, Clusters: cs(st.clusters...),
			Paused: st.paused, Approval: st.approval,
			BlueGreen: BlueGreenInput{Blue: blue, Green: green, NoGreen: st.noGreen, Traffic: traffic, Accepted: st.accepted,
				GreenRunning: st.greenRunning, BlueRunning: st.blueRunning}}
		d := Plan(in)
		if got := bgSummary(d); got != st.want {
			t.Fatalf("step %d (t=%d):\n got %s\nwant %s\nmessage: %s", i, st.at, got, st.want, d.Status.Message)
		}
		if st.says != "" && !bgSays(d, st.says) {
			t.Errorf("step %d (t=%d): neither TrafficShifting %+v nor the events %+v say %q", i, st.at, d.TrafficShifting, d.Events, st.says)
		}
		checkCapacity(t, strategy, prev, in, d)
		in.Previous = roundTrip(t, prev)
		if again := Plan(in); !cmp.Equal(bgSummary(again), bgSummary(d)) {
			t.Errorf("step %d after a restart: %s, want %s", i, bgSummary(again), bgSummary(d))
		}
		prev = roundTrip(t, &d.Status)
	}
}

// bgSays reports whether the TrafficShifting condition or an event of d says text.
func bgSays(d Decision, text string) bool {
	if d.TrafficShifting != nil && strings.Contains(d.TrafficShifting.Message, text) {
		return true
	}
	return slices.ContainsFunc(d.Events, func(e Event) bool { return strings.Contains(e.Message, text) })
}

// roundTrip is s as the binding gives it back: JSON, times to the second.
func roundTrip(t *testing.T, s *fleetv1alpha1.RolloutStatus) *fleetv1alpha1.RolloutStatus {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out fleetv1alpha1.RolloutStatus
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestBlueGreenShift(t *testing.T) {
	us1 := func() *clusterWrapper { return c("us", "r1").done().ep(2) }
	ap := func(rev string) *clusterWrapper { return c("ap", rev) }
	tests := []struct {
		name    string
		traffic bool
		mod     func(*Strategy)
		steps   []bgStep
	}{
		{
			name: "steps, gateway acceptance, hold, retire", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("")}, green: []string{"ap"},
					want: "Progressing Deploying 0% acc=false | apply ap=r2 us=r1 | leave - | shift False/GreenDeploying | ev GreenStarted"},
				{at: 5, clusters: []*clusterWrapper{us1(), ap("r2").why("application app is DEPLOYING")},
					want: "Progressing Deploying 0% acc=false | apply ap=r2 us=r1 | leave - | shift False/GreenDeploying | ev -"},
				{at: 8, clusters: []*clusterWrapper{us1(), ap("r2").done()},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"},
				{at: 9, clusters: []*clusterWrapper{us1(), ap("r2").done()},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 10, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 19, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 20, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 50% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"},
				{at: 21, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 50% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 31, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 75% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"},
				{at: 32, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 75% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 42, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Holding 100% acc=false | apply ap=r2 us=r1 | leave - | shift False/Shifted | ev TrafficShifted"},
				{at: 43, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Holding 100% acc=true | apply ap=r2 us=r1 | leave - | shift False/Shifted | ev -"},
				{at: 102, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Holding 100% acc=true | apply ap=r2 us=r1 | leave - | shift False/Shifted | ev -"},
				{at: 103, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Complete | apply ap=r2 | leave us=Retired | shift False/Shifted | ev BlueRetired,RolloutComplete"},
			},
		},
		{
			name: "a green member not Ready pauses the shift; past the deadline the traffic goes back to blue", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev GreenStarted,TrafficShifted"},
				{at: 1, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 11, clusters: []*clusterWrapper{us1(), ap("r2").done().notReady()}, accepted: true,
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 100, clusters: []*clusterWrapper{us1(), ap("r2").done().notReady()}, accepted: true,
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 101, clusters: []*clusterWrapper{us1(), ap("r2").done().notReady()}, accepted: true,
					want: "Complete | apply us=r1 | leave ap=RolledBack | shift False/ShiftReverted | ev TrafficReverted"},
				{at: 102, clusters: []*clusterWrapper{us1()},
					want: "Complete | apply us=r1 | leave - | shift - | ev -"},
			},
		},
		{
			// What the hub's probe does (hub/fleet withProbe): green Ready, its endpoint failing.
			name: "a green serve endpoint failing mid-shift pauses the shift; past the deadline it reverts", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev GreenStarted,TrafficShifted"},
				{at: 1, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 11, clusters: []*clusterWrapper{us1(), ap("r2").why("serve endpoint failing: GET /-/healthz: 503")}, accepted: true,
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 101, clusters: []*clusterWrapper{us1(), ap("r2").why("serve endpoint failing: GET /-/healthz: 503")}, accepted: true,
					want: "Complete | apply us=r1 | leave ap=RolledBack | shift False/ShiftReverted | ev TrafficReverted"},
			},
		},
		{
			// Past its interval when it recovers, green holds its share again for a whole
			// interval from the gateway accepting it, rather than taking the next step at once.
			name: "a green that recovers mid-shift holds its step again before the next", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev GreenStarted,TrafficShifted"},
				{at: 1, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 11, clusters: []*clusterWrapper{us1(), ap("r2").why("serve endpoint failing: GET /-/healthz: 503")}, accepted: true,
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 30, clusters: []*clusterWrapper{us1(), ap("r2").done()},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 31, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 40, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 41, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 50% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"},
			},
		},
		{
			name: "a blue member not Ready pauses the shift", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev GreenStarted,TrafficShifted"},
				{at: 1, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 30, clusters: []*clusterWrapper{us1().notReady(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 31, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Shifting 50% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"},
			},
		},
		{
			name: "green not done by the deadline: reverted, the revision failed", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("")}, green: []string{"ap"},
					want: "Progressing Deploying 0% acc=false | apply ap=r2 us=r1 | leave - | shift False/GreenDeploying | ev GreenStarted"},
				{at: 100, clusters: []*clusterWrapper{us1(), ap("r2").why("application app is DEPLOY_FAILED")},
					want: "Complete | apply us=r1 | leave ap=RolledBack | shift False/ShiftReverted | ev TrafficReverted"},
			},
		},
		{
			name: "undo mid-shift: 100% back to blue at once", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev GreenStarted,TrafficShifted"},
				{at: 1, target: "r1", clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Complete | apply us=r1 | leave ap=RolledBack | shift False/ShiftReverted | ev TrafficReverted,RolloutComplete"},
			},
		},
		{
			name: "a newer revision mid-shift: traffic back to blue, green updated", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev GreenStarted,TrafficShifted"},
				{at: 1, target: "r3", clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true,
					want: "Progressing Deploying 0% acc=false | apply ap=r3 us=r1 | leave - | shift False/GreenDeploying | ev GreenStarted"},
			},
		},
		{
			name: "approvals before the first step and before 100%", traffic: true,
			mod: func(s *Strategy) { s.BlueGreen.Approval, s.BlueGreen.Step = true, 50 },
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "AwaitingApproval Deploying 0% acc=false | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev GreenStarted,AwaitingApproval"},
				{at: 5, clusters: []*clusterWrapper{us1(), ap("r2").done()},
					want: "AwaitingApproval Deploying 0% acc=false | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 6, clusters: []*clusterWrapper{us1(), ap("r2").done()}, approval: "r2/shift",
					want: "Progressing Shifting 50% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev TrafficShifted"},
				{at: 7, clusters: []*clusterWrapper{us1(), ap("r2").done()}, approval: "r2/shift", accepted: true,
					want: "Progressing Shifting 50% acc=true | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev -"},
				{at: 17, clusters: []*clusterWrapper{us1(), ap("r2").done()}, approval: "r2/shift", accepted: true,
					want: "AwaitingApproval Shifting 50% acc=true | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev AwaitingApproval"},
				{at: 18, clusters: []*clusterWrapper{us1(), ap("r2").done()}, approval: "r2/promote", accepted: true,
					want: "Progressing Holding 100% acc=false | apply ap=r2 us=r1 | leave - | shift False/Shifted | ev TrafficShifted"},
			},
		},
		{
			name: "paused: no step", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "Progressing Shifting 25% acc=false | apply ap=r2 us=r1 | leave - | shift True/Shifting | ev GreenStarted,TrafficShifted"},
				{at: 20, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true, paused: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
				{at: 40, clusters: []*clusterWrapper{us1(), ap("r2").done()}, accepted: true, paused: true,
					want: "Progressing Shifting 25% acc=true | apply ap=r2 us=r1 | leave - | shift True/ShiftPaused | ev -"},
			},
		},
		{
			name: "no traffic managed: green up, hold, blue down",
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1(), ap("r2").done()}, green: []string{"ap"},
					want: "Progressing Holding 100% acc=true | apply ap=r2 us=r1 | leave - | shift False/NoTrafficManaged | ev GreenStarted,TrafficShifted"},
				{at: 59, clusters: []*clusterWrapper{us1(), ap("r2").done()},
					want: "Progressing Holding 100% acc=true | apply ap=r2 us=r1 | leave - | shift False/NoTrafficManaged | ev -"},
				{at: 60, clusters: []*clusterWrapper{us1(), ap("r2").done()},
					want: "Complete | apply ap=r2 | leave us=Retired | shift False/Shifted | ev BlueRetired,RolloutComplete"},
			},
		},
		{
			name: "no green set: waits and says why", traffic: true,
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1()}, noGreen: "0/1 clusters chosen; eu: not ready",
					want: "Progressing | apply us=r1 | leave - | shift False/NoGreenClusters | ev NoGreenClusters"},
				{at: 10, clusters: []*clusterWrapper{us1()}, noGreen: "0/1 clusters chosen; eu: not ready",
					want: "Progressing | apply us=r1 | leave - | shift False/NoGreenClusters | ev -"},
			},
		},
		{
			name: "no green set with fallback Rolling: updated in place", traffic: true,
			mod: func(s *Strategy) { s.BlueGreen.FallbackRolling, s.MaxUnavailable = true, intstr.FromInt32(1) },
			steps: []bgStep{
				{at: 0, clusters: []*clusterWrapper{us1()}, noGreen: "0/1 clusters chosen; eu: not ready",
					want: "Progressing | apply us=r2 | leave - | shift - | ev StageStarted"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, traffic := bgStrategy(tt.traffic, tt.mod)
			runBlueGreen(t, s, traffic, tt.steps)
		})
	}
}

func TestNeedsGreen(t *testing.T) {
	running := cs(c("us", "r1").done())
	tests := []struct {
		name     string
		previous *fleetv1alpha1.RolloutStatus
		target   string
		clusters []Cluster
		want     bool
	}{
		{name: "a new revision", previous: &rstatus{GoodRevision: "r1", TargetRevision: "r1"}, target: "r2", clusters: running, want: true},
		{name: "the good revision", previous: &rstatus{GoodRevision: "r1", TargetRevision: "r1"}, target: "r1", clusters: running},
		{name: "a first revision", previous: nil, target: "r1", clusters: cs(c("us", ""))},
		{name: "the status lost: the good revision inferred", previous: nil, target: "r2", clusters: running, want: true},
		{name: "in flight", previous: &rstatus{GoodRevision: "r1", TargetRevision: "r2", BlueGreen: &fleetv1alpha1.BlueGreenStatus{}}, target: "r2", clusters: running},
		{name: "a failed revision", previous: &rstatus{GoodRevision: "r1", TargetRevision: "r2", FailedRevision: "r2"}, target: "r2", clusters: running},
		{name: "falling back to Rolling", previous: &rstatus{GoodRevision: "r1", TargetRevision: "r2", Stages: []fleetv1alpha1.StageStatus{{Name: "rest"}}}, target: "r2", clusters: running},
		{name: "placed nowhere", previous: &rstatus{GoodRevision: "r1", TargetRevision: "r1"}, target: "r2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsGreen(tt.previous, tt.target, tt.clusters); got != tt.want {
				t.Errorf("NeedsGreen = %t, want %t", got, tt.want)
			}
		})
	}
}
