package fleet

// Phase: plan. Traffic: the route and its weights.

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/rollout"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/serveaddress"
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

// trafficSpec is the policy's traffic, nil when it manages none.
func trafficSpec(g *group) *fleetv1alpha1.TrafficSpec {
	if g.policy.pp == nil {
		return nil
	}
	return g.policy.pp.Spec.Traffic
}

// planTraffic computes the route: each placed cluster's weight from the rollout's split
// (rollout.Weights) and its reported serve address.
func (r *Reconciler) planTraffic(g *group, ro *rolloutDecision, placed []string) *trafficDecision {
	spec := trafficSpec(g)
	if spec == nil || ro == nil {
		return nil
	}
	var percent int32
	if bg := ro.plan.Status.BlueGreen; bg != nil {
		percent = bg.GreenPercent
	}
	probes := r.probeTargets(g, placed)
	refused, keptWithoutGrant := trafficGrant(g, spec)
	if refused != nil {
		// Nothing is written: the weights in force are the route's, if there is one.
		return &trafficDecision{spec: *spec, weights: g.route.state.Weights, unserved: map[string]string{}, kept: map[string]string{},
			probeTargets: probes, err: refused, keptWithoutGrant: keptWithoutGrant}
	}
	facts := r.backendsOf(g, placed)
	whys := dataplane.Unserved(facts)
	split := weights(g, ro.clusters, placed, ro.plan.Colors, percent, whys)
	in := traffic.PlanInput{
		Route: traffic.Input{RayService: g.key, HubName: r.opts.HubName, Spec: *spec, Imports: g.route.imports},
		Live:  g.route.live,
	}
	for name, w := range split {
		in.Shares = append(in.Shares, traffic.Share{Cluster: name, Weight: w, Unserved: whys[name], View: facts[name].View,
			Address: backendAddress(g, name)})
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
func weights(g *group, clusters []rollout.Cluster, placed []string, colors map[string]fleetv1alpha1.Color, greenPercent int32,
	unserved map[string]string) map[string]int32 {
	endpoints := make(map[string]int32, len(clusters))
	for _, c := range clusters {
		endpoints[c.Name] = c.Endpoints
	}
	backends := make([]rollout.Backend, 0, len(placed))
	for _, name := range placed {
		n := endpoints[name]
		if m := g.members[name]; m != nil && m.readErr != nil {
			// Kept by the probe while unreadable: it weighs what it last reported.
			if last := lastStatus(g, name); last != nil {
				n = last.NumServeEndpoints
			}
		}
		backends = append(backends, rollout.Backend{Name: name, Color: colors[name], Serving: unserved[name] == "",
			Endpoints: n})
	}
	return rollout.Weights(backends, greenPercent)
}

// checkServeAddress checks a member's serve address addr against what its MemberCluster
// grants and the traffic cluster's own addresses: a member is trusted with no more than that.
func (r *Reconciler) checkServeAddress(mc *fleetv1alpha1.MemberCluster, addr string) error {
	host, _, err := traffic.ParseAddress(addr)
	if err != nil {
		return err
	}
	policy, err := serveaddress.PolicyOf(mc.Spec.ServeAddresses, r.opts.TrafficCluster)
	if err != nil {
		return fmt.Errorf("MemberCluster %s: %w", mc.Name, err)
	}
	return policy.Check(host)
}

// exportsServe reports whether the policy routes to ServiceImports: the members then export
// their serve Services (labels.ServeExport) and report no address the hub needs.
func exportsServe(g *group) bool {
	spec := trafficSpec(g)
	return spec != nil && spec.BackendKind == fleetv1alpha1.BackendServiceImport
}

// serveAddress is the serve address the member's spoke reported on its copy.
func serveAddress(m *memberRecord) string {
	if m == nil || m.copy == nil {
		return ""
	}
	return m.copy.Annotations[labels.ServeAddress]
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
