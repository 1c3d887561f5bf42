package fleet

// Phase: plan. Traffic: the route and its weights.

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/rollout"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// drainDelay is how long a copy that is leaving stays after the gateway accepted a route that
// sends it no traffic: requests already on their way to it finish.
const drainDelay = 15 * time.Second

// trafficDecision is the route a decision wants in the traffic cluster.
type trafficDecision struct {
	spec fleetv1alpha1.TrafficSpec
	// weights are the placed clusters' weights; a cluster not listed gets none.
	weights map[string]int32
	// unserved says, for each placed cluster that cannot take traffic, why.
	unserved map[string]string
	// kept says, for each placed cluster that takes traffic only because its serve endpoint
	// answers the hub's probe, what the control plane sees of it.
	kept map[string]string
	// probeTargets are the serve addresses the hub's probes watch for this RayService
	// (address → cluster).
	probeTargets map[string]string
	objs         *traffic.Objects
	// err is why the route could not be built (too many backends, an address that does not
	// parse); nothing is written then.
	err error
	// offTimes are, per cluster, since when the gateway has sent it no traffic (the accepted
	// route has no weight for it); absent while it may still get some.
	offTimes map[string]metav1.Time
	// pending are the clusters the route gives no weight yet because their backend objects
	// are only being made (traffic.Unresolved).
	pending []string
	// keptWithoutGrant names the grant the namespace lacks for a route the hub wrote before
	// grants were required, and keeps; "" when the traffic is granted.
	keptWithoutGrant string
}

// pendingRetry is how soon a RayService whose route holds back a backend being made is
// reconciled again: the informers show the objects the executor wrote within a moment, and a
// blue/green step waits on it.
const pendingRetry = time.Second

// planTraffic computes the route: each placed cluster's weight from the rollout's split
// (rollout.Weights) and its reported serve address.
func (r *Reconciler) planTraffic(g *group, f *facts, ro *rolloutDecision, placed []string) *trafficDecision {
	spec := f.traffic
	if spec == nil || ro == nil {
		return nil
	}
	var percent int32
	if bg := ro.plan.Status.BlueGreen; bg != nil {
		percent = bg.GreenPercent
	}
	probes := f.probeTargets(placed)
	refused, keptWithoutGrant := f.trafficRefused, f.trafficKept
	if refused != nil {
		// Nothing is written: the weights in force are the route's, if there is one.
		return &trafficDecision{spec: *spec, weights: g.route.state.Weights, unserved: map[string]string{}, kept: map[string]string{},
			probeTargets: probes, err: refused, keptWithoutGrant: keptWithoutGrant}
	}
	backends := f.backends(placed)
	whys := dataplane.Unserved(backends)
	split := weights(f, ro.clusters, placed, ro.plan.Colors, percent, whys)
	in := traffic.PlanInput{
		Route: traffic.Input{RayService: g.key, HubName: r.opts.HubName, Spec: *spec, Imports: g.route.imports},
		Live:  g.route.live,
	}
	for name, w := range split {
		in.Shares = append(in.Shares, traffic.Share{Cluster: name, Weight: w, Unserved: whys[name], View: backends[name].View,
			Address: f.address(name)})
	}
	plan := traffic.Plan(in)
	var off map[string]metav1.Time
	if plan.Err == nil {
		off = offTimes(g, placed, plan.Weights)
	}
	return &trafficDecision{spec: *spec, weights: plan.Weights, unserved: plan.Unserved, kept: plan.Kept,
		probeTargets: probes, objs: plan.Objects, err: plan.Err, offTimes: off, pending: plan.Pending,
		keptWithoutGrant: keptWithoutGrant}
}

// weights splits the traffic over the placed clusters: by colour with green getting
// greenPercent, each colour by serve endpoints (as the rollout bounded them in clusters), none
// to a cluster that cannot take traffic (unserved[name] != "").
func weights(f *facts, clusters []rollout.Cluster, placed []string, colors map[string]fleetv1alpha1.Color, greenPercent int32,
	unserved map[string]string) map[string]int32 {
	endpoints := make(map[string]int32, len(clusters))
	for _, c := range clusters {
		endpoints[c.Name] = c.Endpoints
	}
	backends := make([]rollout.Backend, 0, len(placed))
	for _, name := range placed {
		n := endpoints[name]
		if mf, ok := f.members[name]; ok && mf.unreadable {
			// Kept by the probe while unreadable: it weighs what it last reported.
			if last := mf.last; last != nil {
				n = last.NumServeEndpoints
			}
		}
		backends = append(backends, rollout.Backend{Name: name, Color: colors[name], Serving: unserved[name] == "",
			Endpoints: n})
	}
	return rollout.Weights(backends, greenPercent)
}

// offTimes gathers from g what traffic.OffTimes decides from.
func offTimes(g *group, placed []string, weights map[string]int32) map[string]metav1.Time {
	var recorded map[string]*metav1.Time
	if g.binding != nil {
		recorded = make(map[string]*metav1.Time, len(g.binding.Status.Clusters))
		for i := range g.binding.Status.Clusters {
			recorded[g.binding.Status.Clusters[i].Name] = g.binding.Status.Clusters[i].TrafficOffTime
		}
	}
	return traffic.OffTimes(traffic.OffInput{
		Accepted: g.route.err == nil && g.route.state.Accepted && g.binding != nil,
		Routed:   g.route.state.Weights, Recorded: recorded,
		Placed: placed, Weights: weights, Now: g.now,
	})
}
