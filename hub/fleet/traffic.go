package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/hub/rollout"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/serveaddress"
)

// drainDelay is how long a copy that is leaving stays after the gateway accepted a route that
// sends it no traffic: requests already on their way to it finish.
const drainDelay = 15 * time.Second

// routeRead is the RayService's HTTPRoute as this reconcile read it.
type routeRead struct {
	// err is why the route could not be read (the traffic cluster unreachable, no rights).
	err   error
	state traffic.State
	// imports are the ServiceImports of the route's namespace, for ServiceImport backends;
	// nil when not read or not readable.
	imports traffic.Imports
}

// acceptedWeights reports whether the gateway accepted a route giving the clusters want.
func (rr routeRead) acceptedWeights(want map[string]int32) bool {
	if rr.err != nil || !rr.state.Accepted {
		return false
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if rr.state.Weights[name] != want[name] {
			return false
		}
	}
	for name, w := range rr.state.Weights {
		if w != 0 && want[name] == 0 {
			return false
		}
	}
	return true
}

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
	// keptWithoutGrant names the grant the namespace lacks for a route the hub wrote before
	// grants were required, and keeps; "" when the traffic is granted.
	keptWithoutGrant string
}

// trafficSpec is the policy's traffic, nil when it manages none.
func trafficSpec(g *group) *fleetv1alpha1.TrafficSpec {
	if g.policy.pp == nil {
		return nil
	}
	return g.policy.pp.Spec.Traffic
}

// readRoute reads the RayService's route in the traffic cluster, uncached.
func (r *Reconciler) readRoute(ctx context.Context, g *group, spec *fleetv1alpha1.TrafficSpec) routeRead {
	reader, _, err := r.trafficClients(ctx, spec)
	if err != nil {
		return routeRead{err: err}
	}
	key := traffic.Key(g.key)
	state, err := traffic.Observe(ctx, reader, key, g.holding())
	rr := routeRead{state: state, err: err}
	if err == nil && spec.BackendKind == fleetv1alpha1.BackendServiceImport {
		imports, ierr := traffic.ObserveImports(ctx, reader, key.Route.Namespace)
		if ierr != nil {
			// The legacy export names carry the traffic meanwhile.
			ctrl.LoggerFrom(ctx).V(1).Info("Could not list ServiceImports; routing to the legacy export names",
				"cluster", spec.Cluster, "reason", ierr.Error())
		}
		rr.imports = imports
	}
	return rr
}

// trafficClients are the clients of the traffic cluster: the hub's own (uncached reads), or
// the member's.
func (r *Reconciler) trafficClients(ctx context.Context, spec *fleetv1alpha1.TrafficSpec) (client.Reader, client.Client, error) {
	if spec.Cluster == "" {
		return r.apiReader, r.client, nil
	}
	reader, err := r.members.Reader(ctx, spec.Cluster)
	if err != nil {
		return nil, nil, fmt.Errorf("traffic cluster %s: %w", spec.Cluster, err)
	}
	w, err := r.members.Client(ctx, spec.Cluster)
	if err != nil {
		return nil, nil, fmt.Errorf("traffic cluster %s: %w", spec.Cluster, err)
	}
	return reader, w, nil
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
	td := &trafficDecision{spec: *spec, unserved: map[string]string{}, kept: map[string]string{},
		probeTargets: r.probeTargets(g, placed)}
	if td.err, td.keptWithoutGrant = trafficGrant(g, spec); td.err != nil {
		// Nothing is written: the weights in force are the route's, if there is one.
		td.weights = g.route.state.Weights
		return td
	}
	facts := r.backendsOf(g, placed)
	whys := unservedWhys(facts)
	td.weights = weights(g, ro.clusters, placed, ro.plan.Colors, percent, whys)
	in := traffic.Input{RayService: g.key, HubName: r.opts.HubName, Spec: *spec, Imports: g.route.imports}
	for _, name := range slices.Sorted(maps.Keys(td.weights)) {
		if why := whys[name]; why != "" {
			td.unserved[name] = why
		} else if view := facts[name].view; view != "" {
			td.kept[name] = view
		}
		b := traffic.Backend{Cluster: name, Weight: td.weights[name]}
		if b.Weight == 0 {
			continue
		}
		if spec.BackendKind != fleetv1alpha1.BackendServiceImport {
			// ServiceImport backends are found by name; only Service backends need the address.
			var err error
			if b.Host, b.Port, err = traffic.ParseAddress(backendAddress(g, name)); err != nil {
				td.err = fmt.Errorf("cluster %s: serve address: %w", name, err)
				return td
			}
		}
		in.Backends = append(in.Backends, b)
	}
	td.objs, td.err = traffic.Desired(in)
	td.offTimes = offTimes(g, placed, td.weights)
	return td
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

// offTimes are, for the clusters the binding lists, since when the accepted route sends them
// nothing: kept from the binding while that holds, now when it starts to, dropped when the
// route gives them weight again or the gateway has not accepted the route.
func offTimes(g *group, placed []string, weights map[string]int32) map[string]metav1.Time {
	out := map[string]metav1.Time{}
	if g.route.err != nil || !g.route.state.Accepted || g.binding == nil {
		return out
	}
	now := metav1.NewTime(g.now.Truncate(time.Second))
	for i := range g.binding.Status.Clusters {
		cs := &g.binding.Status.Clusters[i]
		if g.route.state.Weights[cs.Name] != 0 {
			continue
		}
		if cs.TrafficOffTime != nil {
			out[cs.Name] = *cs.TrafficOffTime
			continue
		}
		out[cs.Name] = now
	}
	for _, name := range placed {
		if _, listed := out[name]; !listed && g.route.state.Weights[name] == 0 && weights[name] == 0 {
			out[name] = now
		}
	}
	return out
}

// draining reports whether cluster name may still get traffic: the policy manages traffic
// and the gateway has not accepted a route without it a drain delay ago.
func (td *trafficDecision) draining(g *group, name string) bool {
	if td == nil {
		return false
	}
	off, ok := td.offTimes[name]
	return !ok || g.now.Before(off.Add(drainDelay))
}

// applyTraffic writes the route and its backends to the traffic cluster, in the RayService's
// namespace (created on a member traffic cluster when missing, as for a copy), then retires the
// route an earlier hub wrote in the Gateway's namespace once the gateway accepted this one. It
// returns that earlier route while it stays.
func (r *Reconciler) applyTraffic(ctx context.Context, g *group, td *trafficDecision) (*types.NamespacedName, error) {
	if td == nil {
		return nil, nil
	}
	if td.err != nil {
		return nil, td.err
	}
	reader, w, err := r.trafficClients(ctx, &td.spec)
	if err != nil {
		return nil, err
	}
	if td.spec.Cluster != "" && !g.route.state.Exists {
		if err := ensureNamespace(ctx, w, g.key.Namespace, podSecurityLevel(g.memberClusters[td.spec.Cluster])); err != nil {
			return nil, fmt.Errorf("traffic cluster %s: %w", td.spec.Cluster, err)
		}
	}
	if err := traffic.Apply(ctx, w, reader, td.objs); err != nil {
		return nil, err
	}
	legacy, ok := traffic.LegacyKey(g.key, &td.spec)
	if !ok {
		return nil, nil
	}
	remains, err := traffic.RetireLegacy(ctx, w, reader, legacy, r.opts.HubName, g.route.state)
	if err != nil {
		// The new route is written; the earlier one is retried next time.
		ctrl.LoggerFrom(ctx).Error(err, "Retiring the route in the Gateway's namespace failed", "route", legacy.Route)
	}
	if remains {
		return &legacy.Route, nil
	}
	return nil, nil
}

// trafficCondition is the hub RayService's TrafficShifting condition: the BlueGreen rollout's,
// or the steady split; RouteNotApplied when the route cannot be written or read. nil when the
// policy manages no traffic and rolls out no BlueGreen.
func trafficCondition(o *outcome) *metav1.Condition {
	d := o.d
	var c *metav1.Condition
	if d.rollout != nil && d.rollout.plan.TrafficShifting != nil {
		c = d.rollout.plan.TrafficShifting.DeepCopy()
	}
	td := d.traffic
	if td == nil {
		return c
	}
	err := td.err
	if o.res != nil && o.res.trafficErr != nil {
		err = o.res.trafficErr
	}
	if err == nil {
		err = o.g.route.err
	}
	if err != nil {
		return routeErrorCondition(o.g.key, err)
	}
	var legacy *types.NamespacedName
	if o.res != nil {
		legacy = o.res.legacyRoute
	}
	switch {
	case o.g.route.state.Refused:
		return notAdmittedCondition(o.g.key, &td.spec, o.g.route.state, legacy)
	case c != nil:
		c.Message = withLegacy(keptText(withUnserved(c.Message, td.unserved), td.kept), legacy)
		return c
	}
	return &metav1.Condition{Type: fleetv1alpha1.ConditionTrafficShifting, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonTrafficSteady, Message: withLegacy(keptText(withUnserved(splitText(td.weights), td.unserved), td.kept), legacy)}
}

// notAdmittedCondition is TrafficShifting when the gateway refused the route of key (st.Refused):
// False with the gateway's own reason and words.
func notAdmittedCondition(key types.NamespacedName, spec *fleetv1alpha1.TrafficSpec, st traffic.State, legacy *types.NamespacedName) *metav1.Condition {
	return &metav1.Condition{Type: fleetv1alpha1.ConditionTrafficShifting, Status: metav1.ConditionFalse,
		Reason: st.Reason, Message: conditions.Truncate(withLegacy(fmt.Sprintf("the Gateway %s/%s does not admit the route %s: %s",
			spec.ParentRef.Namespace, spec.ParentRef.Name, key, st.Message), legacy))}
}

// routeErrorCondition is TrafficShifting when the route of key could not be built, written or
// read: Forbidden when the traffic cluster refused the hub the RayService's namespace.
func routeErrorCondition(key types.NamespacedName, err error) *metav1.Condition {
	c := &metav1.Condition{Type: fleetv1alpha1.ConditionTrafficShifting, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonRouteNotApplied, Message: err.Error()}
	if _, ok := errors.AsType[*notGrantedError](err); ok {
		c.Reason = fleetv1alpha1.ReasonNotGranted
	}
	if apierrors.IsForbidden(err) {
		c.Reason = fleetv1alpha1.ReasonTrafficForbidden
		c.Message = fmt.Sprintf("the hub holds no rights on routes in namespace %s of the traffic cluster; its admin grants them "+
			"(the hub chart's traffic.namespaces, rayfleet join --traffic-namespace, the spoke chart's hubTraffic.namespaces): %v",
			key.Namespace, err)
	}
	return c
}

// withLegacy appends to msg that the route an earlier hub wrote in the Gateway's namespace
// stays, while it does.
func withLegacy(msg string, legacy *types.NamespacedName) string {
	if legacy == nil {
		return msg
	}
	return msg + fmt.Sprintf("; the earlier route %s stays until the gateway accepts the route in the RayService's namespace", legacy)
}

// splitText is the weights as percentages: "eu 50%, us 50%".
func splitText(weights map[string]int32) string {
	parts := make([]string, 0, len(weights))
	for _, name := range slices.Sorted(maps.Keys(weights)) {
		parts = append(parts, fmt.Sprintf("%s %s%%", name, percentText(weights[name])))
	}
	if len(parts) == 0 {
		return "no cluster takes traffic"
	}
	return strings.Join(parts, ", ")
}

// percentText is a weight of rollout.TotalWeight as a percentage, "33.34".
func percentText(w int32) string {
	if w%100 == 0 {
		return fmt.Sprint(w / 100)
	}
	return fmt.Sprintf("%d.%02d", w/100, w%100)
}

// withUnserved appends why clusters cannot take traffic to msg.
func withUnserved(msg string, unserved map[string]string) string {
	for _, name := range slices.Sorted(maps.Keys(unserved)) {
		msg += fmt.Sprintf("; %s takes no traffic: %s", name, unserved[name])
	}
	return msg
}

// setTrafficStatus fills one cluster's colour, weight, serve address (from its copy, when it
// was read) and traffic-off time.
func setTrafficStatus(o *outcome, cs *fleetv1alpha1.ClusterStatus, member *rayv1.RayService, read bool) {
	d := o.d
	cs.Color = ""
	if d.rollout != nil && d.rollout.plan != nil {
		cs.Color = d.rollout.plan.Colors[cs.Name]
	}
	if read {
		cs.ServeAddress = ""
		if member != nil {
			cs.ServeAddress = member.Annotations[labels.ServeAddress]
		}
	}
	if d.traffic == nil {
		cs.Weight, cs.TrafficOffTime = nil, nil
		return
	}
	w := d.traffic.weights[cs.Name]
	cs.Weight = &w
	cs.TrafficOffTime = nil
	if off, ok := d.traffic.offTimes[cs.Name]; ok {
		cs.TrafficOffTime = &off
	}
}
