package main

import (
	"slices"
	"testing"
)

func TestFloorPlan(t *testing.T) {
	for _, tc := range []struct {
		name              string
		services, members int
	}{
		{name: "the benchmark's fleet", services: 2000, members: 100},
		{name: "a small fleet", services: 200, members: 8},
		{name: "fewer members than some policies ask for", services: 40, members: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := floorPlan(tc.services, tc.members)
			if len(plan) != tc.services {
				t.Fatalf("plan has %d RayServices, want %d", len(plan), tc.services)
			}
			load := make([]int, tc.members)
			for i, pick := range plan {
				p := policyOf(i)
				if len(pick) != p.copiesOn(tc.members) {
					t.Errorf("RayService %d (policy %s): %d copies, want %d", i, p.name, len(pick), p.copiesOn(tc.members))
				}
				if !slices.IsSorted(pick) || len(slices.Compact(slices.Clone(pick))) != len(pick) {
					t.Errorf("RayService %d: members %v are not distinct and ascending", i, pick)
				}
				for _, m := range pick {
					if !slices.Contains(p.eligible(tc.members), m) {
						t.Errorf("RayService %d (policy %s): member %d is not eligible", i, p.name, m)
					}
					load[m]++
				}
			}
			// Every policy's eligible members end within one copy of each other... except where
			// policies overlap; the fleet as a whole is within a few copies per member of even.
			total := 0
			for _, n := range load {
				total += n
			}
			lo, hi := slices.Min(load), slices.Max(load)
			if tc.members >= 8 && hi-lo > total/tc.members {
				t.Errorf("copies per member %d to %d (mean %d): not spread", lo, hi, total/tc.members)
			}
		})
	}
}

func TestEligible(t *testing.T) {
	gpuUS := simPolicy{name: "g", clusters: 2, region: "us", gpu: true}
	// Members 0..11: regions us, eu, ap in turn; GPUs on 0, 4, 8. us: 0, 3, 6, 9.
	if got, want := gpuUS.eligible(12), []int{0}; !slices.Equal(got, want) {
		t.Errorf("GPU members in us: %v, want %v", got, want)
	}
	if got, want := (simPolicy{region: "eu"}).eligible(6), []int{1, 4}; !slices.Equal(got, want) {
		t.Errorf("members in eu: %v, want %v", got, want)
	}
	if got := (simPolicy{}).eligible(5); len(got) != 5 {
		t.Errorf("no selector: %v, want all 5", got)
	}
}
