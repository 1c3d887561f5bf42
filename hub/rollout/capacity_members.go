package rollout

import (
	"maps"
	"slices"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// maxBoundedReplicas is the largest worker group size the capacity step bounds: an autoscaling
// group whose maxReplicas is larger (KubeRay's default is 2^31-1) has no size to take a share
// of, and is left to its autoscaler.
const maxBoundedReplicas = 1 << 20

// CapacityMember is one member of a capacity-following rollout as the capacity step sees it.
type CapacityMember struct {
	Color fleetv1alpha1.Color
	// Set is the full set of the copy the member gets.
	Set CapacitySet
	// Held is, per worker group, the worker Pods the member holds now, starting and deleting
	// ones included (runningreplicas.Replicas.Held).
	Held map[string]int32
}

// MemberOverlay is one member's capacity, as Overlay applies it to its copy.
type MemberOverlay struct {
	// Replicas is the most replicas of each worker group the copy may run.
	Replicas map[string]int32
	// TargetCapacity is the Serve config's target_capacity.
	TargetCapacity int32
}

// MemberOverlays spreads a capacity step over the members: per worker group, each colour's
// replicas for the whole fleet are Replicas of the larger colour's size, no more than the
// colour's own share of its size, and shared among the colour's members in proportion to
// their sizes, so that the members of a colour together hold what the step gives it. A group's
// size is its Full replicas, or its maxReplicas when it autoscales (the hub moves the bounds,
// the autoscaler the replicas within them). Serve's target_capacity is each copy's own, as
// percents are. Members of neither colour get nothing.
func MemberOverlays(t CapacityTargets, surge int32, members map[string]CapacityMember) map[string]MemberOverlay {
	out := make(map[string]MemberOverlay, len(members))
	groups := map[string]bool{}
	for name, m := range members {
		if m.Color != fleetv1alpha1.ColorGreen && m.Color != fleetv1alpha1.ColorBlue {
			continue
		}
		out[name] = MemberOverlay{Replicas: map[string]int32{}, TargetCapacity: ServeTargetCapacity(m.Set, targetOf(t, m.Color))}
		for g := range m.Set.Workers {
			groups[g] = true
		}
	}
	names := slices.Sorted(maps.Keys(out))
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		var size, held [2]int32
		bounded := true
		for _, name := range names {
			m := members[name]
			wg, ok := m.Set.Workers[g]
			if !ok {
				continue
			}
			n, ok := boundedSize(wg)
			bounded = bounded && ok
			c := colorIndex(m.Color)
			size[c] += n
			held[c] += ceilDiv(max(m.Held[g], 0), max(wg.NumOfHosts, 1))
		}
		if !bounded {
			continue
		}
		r := Replicas(max(size[0], size[1]), surge, t.Step(), GroupReplicas{Green: held[0], Blue: held[1]})
		total := [2]int32{min(r.Green, CarryReplicas(size[0], t.Green)), min(r.Blue, CarryReplicas(size[1], t.Blue))}
		for c := range total {
			for name, n := range share(total[c], g, colorOf(c), names, members) {
				out[name].Replicas[g] = n
			}
		}
	}
	return out
}

// share divides total among the members of color that have group g, in proportion to their
// sizes, by largest remainder (ties to the first name), so the parts add up to total.
func share(total int32, g string, color fleetv1alpha1.Color, names []string, members map[string]CapacityMember) map[string]int32 {
	type part struct {
		name      string
		n, remain int64
	}
	var parts []part
	var sum int64
	for _, name := range names {
		m := members[name]
		wg, ok := m.Set.Workers[g]
		if m.Color != color || !ok {
			continue
		}
		n, _ := boundedSize(wg)
		parts = append(parts, part{name: name, n: int64(n)})
		sum += int64(n)
	}
	out := make(map[string]int32, len(parts))
	if sum == 0 {
		for _, p := range parts {
			out[p.name] = 0
		}
		return out
	}
	given := int64(0)
	for i := range parts {
		p := &parts[i]
		q := int64(total) * p.n
		out[p.name] = int32(q / sum)
		p.remain = q % sum
		given += q / sum
	}
	order := slices.Clone(parts)
	slices.SortStableFunc(order, func(a, b part) int { return int(b.remain - a.remain) })
	for i := int64(0); i < int64(total)-given; i++ {
		out[order[i].name]++
	}
	return out
}

// boundedSize is a group's size for the capacity step, false when it has none to bound.
func boundedSize(g WorkerGroup) (int32, bool) {
	n := g.Full()
	if g.Autoscaling && !g.Suspended {
		n = g.Size.MaxReplicas
	}
	if n > maxBoundedReplicas {
		return 0, false
	}
	return max(n, 0), true
}

func targetOf(t CapacityTargets, c fleetv1alpha1.Color) int32 {
	if c == fleetv1alpha1.ColorGreen {
		return t.Green
	}
	return t.Blue
}

func colorIndex(c fleetv1alpha1.Color) int {
	if c == fleetv1alpha1.ColorGreen {
		return 0
	}
	return 1
}

func colorOf(i int) fleetv1alpha1.Color {
	if i == 0 {
		return fleetv1alpha1.ColorGreen
	}
	return fleetv1alpha1.ColorBlue
}
