package traffic

import (
	"cmp"
	"fmt"
	"slices"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Share is one cluster's part of the traffic, as the caller's rollout split it.
type Share struct {
	// Cluster is the member's name.
	Cluster string
	// Weight is its part of the split; 0 for a cluster that takes none.
	Weight int32
	// Unserved says why it cannot take traffic; "" when it can.
	Unserved string
	// View is what the control plane sees of a cluster that takes traffic only because its
	// serve endpoint answers the hub's probe; "" otherwise.
	View string
	// Address is the serve address its spoke reported ("host:port"), for Service backends.
	Address string
}

// PlanInput is everything Plan decides from.
type PlanInput struct {
	// Route is the route's input; its Backends are Plan's to fill.
	Route Input
	// Shares are the clusters the route may give traffic, each at most once.
	Shares []Share
	// Live is what the traffic cluster holds, as read with the group; nil when not read.
	Live *Live
}

// Decision is the route Plan decided on.
type Decision struct {
	// Weights are what the route gives each cluster of the shares.
	Weights map[string]int32
	// Unserved says, for each cluster that takes no traffic it was given a share of, why.
	Unserved map[string]string
	// Kept are the Views of the clusters that take traffic only because the probe says so.
	Kept map[string]string
	// Pending are the clusters whose backend objects are being made: the route gives them
	// no weight until a read shows them (Unresolved).
	Pending []string
	// Objects are the route and backends to write; nil with Err.
	Objects *Objects
	// Err is why the route cannot be built (an address that does not parse, too many
	// backends); nothing is written then.
	Err error
}

// Plan decides the route of one RayService: each share's weight, except for a cluster whose
// backend objects the traffic cluster does not hold yet, which gets its objects now and its
// weight once they are there (while every cluster given weight waits so, the route in force
// keeps its weights for those that still serve, and a route not made yet waits for them), and
// the objects to write. It makes no API calls.
func Plan(in PlanInput) Decision {
	d := Decision{Weights: make(map[string]int32, len(in.Shares)), Unserved: map[string]string{}, Kept: map[string]string{}}
	shares := slices.SortedFunc(slices.Values(in.Shares), func(a, b Share) int { return cmp.Compare(a.Cluster, b.Cluster) })
	route := in.Route
	route.Backends = nil
	for _, s := range shares {
		d.Weights[s.Cluster] = s.Weight
		if s.Unserved != "" {
			d.Unserved[s.Cluster] = s.Unserved
		} else if s.View != "" {
			d.Kept[s.Cluster] = s.View
		}
	}
	for _, s := range shares {
		if s.Weight == 0 {
			continue
		}
		b := Backend{Cluster: s.Cluster, Weight: s.Weight}
		if route.Spec.BackendKind != fleetv1alpha1.BackendServiceImport {
			// ServiceImport backends are found by name; only Service backends need the address.
			var err error
			if b.Host, b.Port, err = ParseAddress(s.Address); err != nil {
				d.Err = fmt.Errorf("cluster %s: serve address: %w", s.Cluster, err)
				return d
			}
		}
		route.Backends = append(route.Backends, b)
	}
	unresolved := Unresolved(route, in.Live)
	for i := range route.Backends {
		if b := &route.Backends[i]; unresolved[b.Cluster] {
			b.Pending = true
			d.Weights[b.Cluster] = 0
			d.Unserved[b.Cluster] = pendingText
			d.Pending = append(d.Pending, b.Cluster)
		}
	}
	if len(d.Pending) > 0 && !anyWeighted(route.Backends) {
		// Every cluster given weight is still being made, and a route with no weighted backend
		// answers every request with 503: the route in force keeps its weights for the clusters
		// that still serve until a read shows the new objects.
		for _, b := range held(route, shares, in.Live) {
			route.Backends = append(route.Backends, b)
			d.Weights[b.Cluster] = b.Weight
		}
	}
	d.Objects, d.Err = Desired(route)
	if d.Objects != nil && len(d.Pending) > 0 && !anyWeighted(route.Backends) && (in.Live == nil || in.Live.Route == nil) {
		// A new route with no weighted backend answers 503 for its whole path, and the gateway
		// may prefer it to another route of that path (the one an earlier hub wrote in the
		// Gateway's namespace): it is made once the backends it routes to are there.
		d.Objects.RouteHeld = true
	}
	return d
}

// anyWeighted reports whether a backend that is not pending has weight.
func anyWeighted(backends []Backend) bool {
	return slices.ContainsFunc(backends, func(b Backend) bool { return !b.Pending && b.Weight > 0 })
}

// held are the backends the live route gives weight to among shares that serve, are given no
// weight now and whose objects live holds, at their live weights: what keeps the traffic
// flowing while the clusters now given it are being made.
func held(route Input, shares []Share, live *Live) []Backend {
	if live == nil || live.Route == nil {
		return nil
	}
	names := make([]string, 0, len(shares))
	for _, s := range shares {
		names = append(names, s.Cluster)
	}
	liveWeights := weights(Key(route.RayService), live.Route, names)
	var out []Backend
	for _, s := range shares {
		w := liveWeights[s.Cluster]
		if w <= 0 || s.Weight > 0 || s.Unserved != "" {
			continue
		}
		b := Backend{Cluster: s.Cluster, Weight: w}
		if route.Spec.BackendKind != fleetv1alpha1.BackendServiceImport {
			var err error
			if b.Host, b.Port, err = ParseAddress(s.Address); err != nil {
				continue
			}
		}
		probe := route
		probe.Backends = []Backend{b}
		if Unresolved(probe, live)[b.Cluster] {
			continue
		}
		out = append(out, b)
	}
	return out
}

// pendingText says why a cluster whose backend objects are being made takes no traffic yet.
const pendingText = "its backend Service is being made in the traffic cluster; it gets its share once it is there"
