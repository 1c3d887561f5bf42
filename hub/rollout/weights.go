package rollout

import (
	"cmp"
	"slices"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// TotalWeight is what the weights of one route add up to: percentages with two decimals.
const TotalWeight int32 = 10000

// Backend is one cluster as the traffic split sees it.
type Backend struct {
	// Name of the cluster.
	Name string
	// Color is the cluster's colour in a BlueGreen rollout; "" outside one (one pool).
	Color fleetv1alpha1.Color
	// Serving is whether the cluster can take traffic now: Ready, with a serve address and
	// serve endpoints.
	Serving bool
	// Endpoints is its serve endpoint count; the split within a colour follows it.
	Endpoints int32
}

// Weights splits TotalWeight over the serving backends: green gets greenPercent of it and
// the rest goes to blue and to clusters of no colour, each pool split in proportion to its
// members' endpoints. A pool with no serving member gives its share to the other one, so
// that a colour that is down never takes traffic into nowhere. Every backend has an entry;
// those not serving get 0.
func Weights(backends []Backend, greenPercent int32) map[string]int32 {
	out := make(map[string]int32, len(backends))
	var green, other []Backend
	for _, b := range backends {
		out[b.Name] = 0
		switch {
		case !b.Serving:
		case b.Color == fleetv1alpha1.ColorGreen:
			green = append(green, b)
		default:
			other = append(other, b)
		}
	}
	greenShare := TotalWeight * min(max(greenPercent, 0), 100) / 100
	switch {
	case len(green) == 0:
		greenShare = 0
	case len(other) == 0:
		greenShare = TotalWeight
	}
	spread(out, green, greenShare)
	spread(out, other, TotalWeight-greenShare)
	return out
}

// spread splits total over pool in proportion to endpoints (a serving cluster counts at least
// one), giving the rounding remainder to the largest fractions, ties by name, so that the
// weights add up to total exactly and do not change from one decision to the next.
func spread(out map[string]int32, pool []Backend, total int32) {
	if len(pool) == 0 || total == 0 {
		return
	}
	var sum int64
	for _, b := range pool {
		sum += int64(max(b.Endpoints, 1))
	}
	type share struct {
		name string
		rem  int64
	}
	rems := make([]share, 0, len(pool))
	given := int32(0)
	for _, b := range pool {
		n := int64(total) * int64(max(b.Endpoints, 1))
		out[b.Name] = int32(n / sum)
		given += out[b.Name]
		rems = append(rems, share{b.Name, n % sum})
	}
	slices.SortFunc(rems, func(a, b share) int { return cmp.Or(cmp.Compare(b.rem, a.rem), cmp.Compare(a.name, b.name)) })
	for i := 0; given < total; i++ {
		out[rems[i%len(rems)].name]++
		given++
	}
}
