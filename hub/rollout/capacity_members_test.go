package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestMemberOverlays(t *testing.T) {
	fixedGroup := func(n int32) WorkerGroup {
		return WorkerGroup{Size: WorkerGroupSize{Replicas: n, MinReplicas: 0, MaxReplicas: 1 << 30}, NumOfHosts: 1}
	}
	set := func(groups map[string]WorkerGroup, serve map[string]ServeDeployment) CapacitySet {
		return CapacitySet{Workers: groups, Serve: serve}
	}
	gpu4 := set(map[string]WorkerGroup{"gpu": fixedGroup(4)}, map[string]ServeDeployment{"app/Model": fixed(4)})
	gpu2 := set(map[string]WorkerGroup{"gpu": fixedGroup(2)}, map[string]ServeDeployment{"app/Model": fixed(2)})
	green, blue := fleetv1alpha1.ColorGreen, fleetv1alpha1.ColorBlue
	forward := func(g, b int32) CapacityTargets {
		return CapacityTargets{Direction: CapacityForward, Green: g, Blue: b}
	}
	tests := []struct {
		name    string
		targets CapacityTargets
		members map[string]CapacityMember
		want    map[string]MemberOverlay
	}{
		{
			name:    "first step: green gets its surge beside the whole of blue",
			targets: forward(25, 100),
			members: map[string]CapacityMember{
				"east": {Color: blue, Set: gpu4, Held: map[string]int32{"gpu": 4}},
				"west": {Color: green, Set: gpu4},
			},
			want: map[string]MemberOverlay{
				"east": {Replicas: map[string]int32{"gpu": 4}, TargetCapacity: 100},
				"west": {Replicas: map[string]int32{"gpu": 1}, TargetCapacity: 25},
			},
		},
		{
			name:    "green waits for the room blue's deleting Pod still holds",
			targets: forward(50, 75),
			members: map[string]CapacityMember{
				"east": {Color: blue, Set: gpu4, Held: map[string]int32{"gpu": 4}},
				"west": {Color: green, Set: gpu4, Held: map[string]int32{"gpu": 1}},
			},
			want: map[string]MemberOverlay{
				"east": {Replicas: map[string]int32{"gpu": 3}, TargetCapacity: 75},
				"west": {Replicas: map[string]int32{"gpu": 1}, TargetCapacity: 50},
			},
		},
		{
			name:    "once it is gone, green grows",
			targets: forward(50, 75),
			members: map[string]CapacityMember{
				"east": {Color: blue, Set: gpu4, Held: map[string]int32{"gpu": 3}},
				"west": {Color: green, Set: gpu4, Held: map[string]int32{"gpu": 1}},
			},
			want: map[string]MemberOverlay{
				"east": {Replicas: map[string]int32{"gpu": 3}, TargetCapacity: 75},
				"west": {Replicas: map[string]int32{"gpu": 2}, TargetCapacity: 50},
			},
		},
		{
			name:    "two members a colour share its replicas by size, largest remainder first",
			targets: forward(50, 75),
			members: map[string]CapacityMember{
				"b1": {Color: blue, Set: gpu2, Held: map[string]int32{"gpu": 2}},
				"b2": {Color: blue, Set: gpu2, Held: map[string]int32{"gpu": 1}},
				"g1": {Color: green, Set: gpu2, Held: map[string]int32{"gpu": 1}},
				"g2": {Color: green, Set: gpu2},
			},
			want: map[string]MemberOverlay{
				"b1": {Replicas: map[string]int32{"gpu": 2}, TargetCapacity: 75},
				"b2": {Replicas: map[string]int32{"gpu": 1}, TargetCapacity: 75},
				"g1": {Replicas: map[string]int32{"gpu": 1}, TargetCapacity: 50},
				"g2": {Replicas: map[string]int32{"gpu": 1}, TargetCapacity: 50},
			},
		},
		{
			name:    "a multi-host group's held Pods count in replicas",
			targets: forward(50, 75),
			members: map[string]CapacityMember{
				"east": {Color: blue, Set: set(map[string]WorkerGroup{"tpu": {Size: WorkerGroupSize{Replicas: 4, MaxReplicas: 4}, NumOfHosts: 2}}, nil),
					Held: map[string]int32{"tpu": 6}},
				"west": {Color: green, Set: set(map[string]WorkerGroup{"tpu": {Size: WorkerGroupSize{Replicas: 4, MaxReplicas: 4}, NumOfHosts: 2}}, nil),
					Held: map[string]int32{"tpu": 2}},
			},
			want: map[string]MemberOverlay{
				"east": {Replicas: map[string]int32{"tpu": 3}, TargetCapacity: 75},
				"west": {Replicas: map[string]int32{"tpu": 2}, TargetCapacity: 50},
			},
		},
		{
			name:    "an autoscaling group is bounded by its maxReplicas, an unbounded one left to its autoscaler",
			targets: forward(25, 100),
			members: map[string]CapacityMember{
				"east": {Color: blue, Set: set(map[string]WorkerGroup{
					"gpu": {Size: WorkerGroupSize{Replicas: 1, MinReplicas: 0, MaxReplicas: 8}, NumOfHosts: 1, Autoscaling: true},
					"cpu": {Size: WorkerGroupSize{MaxReplicas: 1<<31 - 1}, NumOfHosts: 1, Autoscaling: true},
				}, nil), Held: map[string]int32{"gpu": 2}},
				"west": {Color: green, Set: set(map[string]WorkerGroup{
					"gpu": {Size: WorkerGroupSize{Replicas: 1, MinReplicas: 0, MaxReplicas: 8}, NumOfHosts: 1, Autoscaling: true},
					"cpu": {Size: WorkerGroupSize{MaxReplicas: 1<<31 - 1}, NumOfHosts: 1, Autoscaling: true},
				}, nil)},
			},
			want: map[string]MemberOverlay{
				"east": {Replicas: map[string]int32{"gpu": 8}, TargetCapacity: 100},
				"west": {Replicas: map[string]int32{"gpu": 2}, TargetCapacity: 25},
			},
		},
		{
			name:    "a larger green set is bounded by its own size, the larger one's surge",
			targets: forward(25, 100),
			members: map[string]CapacityMember{
				"east": {Color: blue, Set: gpu2, Held: map[string]int32{"gpu": 2}},
				"west": {Color: green, Set: gpu4},
			},
			want: map[string]MemberOverlay{
				"east": {Replicas: map[string]int32{"gpu": 2}, TargetCapacity: 100},
				"west": {Replicas: map[string]int32{"gpu": 1}, TargetCapacity: 25},
			},
		},
		{
			name:    "the undo grows blue first",
			targets: CapacityTargets{Direction: CapacityUndo, Green: 50, Blue: 75},
			members: map[string]CapacityMember{
				"east": {Color: blue, Set: gpu4, Held: map[string]int32{"gpu": 2}},
				"west": {Color: green, Set: gpu4, Held: map[string]int32{"gpu": 2}},
			},
			want: map[string]MemberOverlay{
				"east": {Replicas: map[string]int32{"gpu": 3}, TargetCapacity: 75},
				"west": {Replicas: map[string]int32{"gpu": 2}, TargetCapacity: 50},
			},
		},
		{
			name:    "a member of neither colour gets nothing",
			targets: forward(25, 100),
			members: map[string]CapacityMember{
				"east":  {Color: blue, Set: gpu4, Held: map[string]int32{"gpu": 4}},
				"other": {Set: gpu4},
			},
			want: map[string]MemberOverlay{"east": {Replicas: map[string]int32{"gpu": 4}, TargetCapacity: 100}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MemberOverlays(tt.targets, 25, tt.members)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("MemberOverlays() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemberOverlaysWithinBound walks a forward change of one group of 4 over two members a
// colour, the Pods following each answer, and checks that the fleet never holds more than
// the set plus its surge.
func TestMemberOverlaysWithinBound(t *testing.T) {
	group := WorkerGroup{Size: WorkerGroupSize{Replicas: 2, MaxReplicas: 2}, NumOfHosts: 1}
	set := CapacitySet{Workers: map[string]WorkerGroup{"gpu": group}}
	held := map[string]int32{"b1": 2, "b2": 2, "g1": 0, "g2": 0}
	colors := map[string]fleetv1alpha1.Color{"b1": fleetv1alpha1.ColorBlue, "b2": fleetv1alpha1.ColorBlue,
		"g1": fleetv1alpha1.ColorGreen, "g2": fleetv1alpha1.ColorGreen}
	const surge, limit = 25, 5
	for _, step := range [][2]int32{{25, 100}, {50, 75}, {75, 50}, {100, 25}, {100, 0}} {
		// Each step is decided twice: once while the Pods of the last one still stand, once after.
		for range 2 {
			members := map[string]CapacityMember{}
			for name, c := range colors {
				members[name] = CapacityMember{Color: c, Set: set, Held: map[string]int32{"gpu": held[name]}}
			}
			got := MemberOverlays(CapacityTargets{Direction: CapacityForward, Green: step[0], Blue: step[1]}, surge, members)
			// Shrinking colours give their Pods back first; then the growing ones start theirs.
			for name, o := range got {
				held[name] = min(held[name], o.Replicas["gpu"])
			}
			for name, o := range got {
				held[name] = o.Replicas["gpu"]
			}
			total := held["b1"] + held["b2"] + held["g1"] + held["g2"]
			if total > limit {
				t.Fatalf("step %v: the fleet holds %d replicas (%v), more than %d", step, total, held, limit)
			}
		}
	}
	if held["g1"]+held["g2"] != 4 || held["b1"]+held["b2"] != 0 {
		t.Fatalf("after the last step: %v, want green 4 and blue 0", held)
	}
}
