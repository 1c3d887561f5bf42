package main

import (
	"cmp"
	"slices"
)

// eligible are the indexes of the members of a fleet of members that p may place on: those
// matching its region, with GPUs when it asks for them.
func (p simPolicy) eligible(members int) []int {
	var out []int
	for i := range members {
		if (p.region == "" || simMemberLabels(i)[regionLabel] == p.region) && (!p.gpu || hasGPU(i)) {
			out = append(out, i)
		}
	}
	return out
}

// floorPlan is, for each of services RayServices in turn, the members (indexes, ascending) the
// floor places its copies on: as many as its policy asks for (copiesOn), the eligible members
// holding the fewest copies so far, the lowest index first among equals. The hub spreads by
// free capacity, which the harness's reports lower by each copy held, so it places alike; the
// floor only needs the same number of copies, evenly spread, on members its policies allow.
func floorPlan(services, members int) [][]int {
	load := make([]int, members)
	plan := make([][]int, services)
	for i := range services {
		p := policyOf(i)
		candidates := p.eligible(members)
		slices.SortStableFunc(candidates, func(a, b int) int { return cmp.Compare(load[a], load[b]) })
		pick := slices.Clone(candidates[:p.copiesOn(members)])
		slices.Sort(pick)
		for _, m := range pick {
			load[m]++
		}
		plan[i] = pick
	}
	return plan
}
