package fleet

// Phase: read (derived). The facts: what the plan needs of the group, each derived once from
// it before anything is decided, so that the plan steps take values and never go back to g.

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/serveaddress"
)

// facts are what one decision derives from its group, computed once by factsOf and read
// only afterwards.
type facts struct {
	// members holds the facts of every member record, by name.
	members map[string]memberFacts
	// planning are the MemberClusters as the planner sees them, sorted by name.
	planning []placement.Member
	// traffic is the policy's traffic, nil when it manages none.
	traffic *fleetv1alpha1.TrafficSpec
	// exportsServe is set when the policy routes to ServiceImports.
	exportsServe bool
	// probing is set when the hub probes the RayService's backends (probes on, addresses
	// routed to).
	probing bool
	// trafficRefused and trafficKept are the namespace's grant for the traffic (trafficGrant).
	trafficRefused error
	trafficKept    string
	// The planner's input derived from the group: see placement.Input.
	held        map[string]corev1.ResourceList
	refused     map[string]string
	ungranted   map[string]string
	failingOver string
	serving     map[string]bool
	// previousLeaving are the binding's leaving entries by cluster.
	previousLeaving map[string]*fleetv1alpha1.ClusterLeaving
	// blueGreen is the BlueGreen rollout in flight (blueGreenInFlight); nil when none.
	blueGreen *fleetv1alpha1.BlueGreenStatus
}

// memberFacts are the facts of one member record.
type memberFacts struct {
	// unreadable is set when its copy could not be read (or it left the fleet).
	unreadable bool
	// inFleet is set while it has a MemberCluster.
	inFleet bool
	// ready is its MemberCluster's Ready as the planner sees it; false once it left.
	ready bool
	// last is the binding's entry for it, what the hub last recorded; nil when none.
	last *fleetv1alpha1.ClusterStatus
	// address is its serve address: the copy's, or while the copy cannot be read, the last
	// recorded one.
	address string
	// addressErr is why its MemberCluster does not grant address; only checked for an address
	// the hub routes to (not exported, not empty, the member still in the fleet).
	addressErr error
	// backend is its backend as the data plane decides from it.
	backend dataplane.Backend
	// serving is whether its copy serves, whatever revision it runs (servingState).
	serving doneState
}

// notAMember is the backend of a cluster that is not (or no longer) a member.
var notAMember = dataplane.Backend{View: "not a member", CopyWhy: "not a member"}

// factsOf derives g's facts. It reads g after readSpecs filled the copies, and writes neither
// g nor anything the next reconcile reads (memberViews aside, a memo of the same values).
func (r *Reconciler) factsOf(g *group) *facts {
	f := &facts{
		planning:        membersOf(g.memberClusters, r.memberViews),
		traffic:         trafficSpec(g),
		exportsServe:    exportsServe(g),
		held:            heldBy(g),
		refused:         refusedForPlanning(g),
		ungranted:       ungranted(g),
		previousLeaving: previousLeaving(g),
		blueGreen:       blueGreenInFlight(g),
		members:         make(map[string]memberFacts, len(g.members)),
	}
	f.probing = r.opts.Probes != nil && !f.exportsServe && f.traffic != nil
	if f.traffic != nil {
		f.trafficRefused, f.trafficKept = trafficGrant(g, f.traffic)
	}
	for name, m := range g.members {
		f.members[name] = r.memberFactsOf(g, m, f.exportsServe)
	}
	f.failingOver = failingOver(g, f)
	if f.probing {
		f.serving = f.servingMembers(g.placedBefore())
	}
	return f
}

// memberFactsOf derives one member record's facts.
func (r *Reconciler) memberFactsOf(g *group, m *memberRecord, exports bool) memberFacts {
	mf := memberFacts{unreadable: m.readErr != nil, last: lastStatus(g, m.name), serving: servingState(m.copy)}
	mf.address = addressOf(m, mf.last)
	if m.mc == nil {
		mf.backend = notAMember
		return mf
	}
	mf.inFleet = true
	mf.ready = r.memberViews.of(m.mc).Ready
	if !exports && mf.address != "" {
		mf.addressErr = r.checkServeAddress(m.mc, mf.address)
	}
	switch {
	case m.readErr != nil:
		mf.backend.View = "not reachable"
	case !mf.ready:
		mf.backend.View = "not Ready"
	}
	mf.backend.CopyWhy = copyWhy(m, mf, exports)
	if h, ok := g.probes[mf.address]; ok && mf.backend.CopyWhy == "" && !exports {
		mf.backend.Probe, mf.backend.ProbeErr = h.Verdict(g.now, g.probeFresh), h.Err
	}
	return mf
}

// backend is cluster name's backend; a cluster with no record is not a member.
func (f *facts) backend(name string) dataplane.Backend {
	if mf, ok := f.members[name]; ok {
		return mf.backend
	}
	return notAMember
}

// backends are names' backends.
func (f *facts) backends(names []string) map[string]dataplane.Backend {
	out := make(map[string]dataplane.Backend, len(names))
	for _, name := range names {
		out[name] = f.backend(name)
	}
	return out
}

// copyWhy is the member's objection to taking traffic, from its copy when it was read, else
// from the last status the hub recorded of it.
func copyWhy(m *memberRecord, mf memberFacts, exports bool) string {
	if m.readErr != nil {
		last := mf.last
		switch {
		case last == nil || (last.ServeAddress == "" && !exports):
			return "no serve address known"
		case last.NumServeEndpoints == 0:
			return "no serve endpoints"
		case !exports && mf.addressErr != nil:
			return "serve address refused: " + mf.addressErr.Error()
		}
		return ""
	}
	switch {
	case m.copy == nil:
		return "no copy yet"
	case m.copy.Annotations[labels.ServeAddress] == "" && !exports:
		if why := m.copy.Annotations[labels.NoServeAddress]; why != "" {
			return "no serve address: " + why
		}
		return "no serve address reported yet"
	case m.copy.Status.NumServeEndpoints == 0:
		return "no serve endpoints"
	case !exports && mf.addressErr != nil:
		return "serve address refused: " + mf.addressErr.Error()
	}
	return ""
}

// servingMembers are the members in names whose backend for the RayService answers the hub's
// probe now, with nothing in its copy against routing to it (placement.Input.Serving).
func (f *facts) servingMembers(names []string) map[string]bool {
	out := map[string]bool{}
	for _, name := range names {
		if b := f.backend(name); b.Probe == dataplane.Serving && b.CopyWhy == "" {
			out[name] = true
		}
	}
	return out
}

// probeTargets are the serve addresses of the placed clusters whose address the hub may route
// to (address → cluster): those the probes watch, whether they take traffic now or not, so
// that one taken off is seen to recover. nil when the hub does not probe.
func (f *facts) probeTargets(placed []string) map[string]string {
	if !f.probing {
		return nil
	}
	out := map[string]string{}
	for _, name := range placed {
		mf, ok := f.members[name]
		if !ok || !mf.inFleet || mf.address == "" || mf.addressErr != nil {
			continue
		}
		out[mf.address] = name
	}
	return out
}

// address is cluster name's serve address (memberFacts.address); "" without a record.
func (f *facts) address(name string) string {
	return f.members[name].address
}

// trafficSpec is the policy's traffic, nil when it manages none.
func trafficSpec(g *group) *fleetv1alpha1.TrafficSpec {
	if g.policy.pp == nil {
		return nil
	}
	return g.policy.pp.Spec.Traffic
}

// exportsServe reports whether the policy routes to ServiceImports: the members then export
// their serve Services (labels.ServeExport) and report no address the hub needs.
func exportsServe(g *group) bool {
	spec := trafficSpec(g)
	return spec != nil && spec.BackendKind == fleetv1alpha1.BackendServiceImport
}

// lastStatus is the binding's entry for cluster name, what the hub last saw of it; nil when
// there is none.
func lastStatus(g *group, name string) *fleetv1alpha1.ClusterStatus {
	if g.binding == nil {
		return nil
	}
	for i := range g.binding.Status.Clusters {
		if g.binding.Status.Clusters[i].Name == name {
			return &g.binding.Status.Clusters[i]
		}
	}
	return nil
}

// backendAddress is cluster name's serve address: its copy's, or while the copy cannot be
// read, the one the hub last recorded. The probes are read by it, before the facts.
func backendAddress(g *group, name string) string {
	return addressOf(g.members[name], lastStatus(g, name))
}

// addressOf is backendAddress of m, given its last recorded status.
func addressOf(m *memberRecord, last *fleetv1alpha1.ClusterStatus) string {
	if m != nil && m.readErr != nil {
		if last != nil {
			return last.ServeAddress
		}
		return ""
	}
	return serveAddress(m)
}

// serveAddress is the serve address the member's spoke reported on its copy.
func serveAddress(m *memberRecord) string {
	if m == nil || m.copy == nil {
		return ""
	}
	return m.copy.Annotations[labels.ServeAddress]
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

// heldBy is what the RayService's copies already hold on their current clusters: a copy whose
// member reported an active RayCluster runs there, and the member's free capacity no longer
// counts its Pods. Without this, a copy filling its member would be moved on the next plan.
func heldBy(g *group) map[string]corev1.ResourceList {
	if g.binding == nil {
		return nil
	}
	demand := placement.DemandOf(g.hub)
	held := map[string]corev1.ResourceList{}
	for i := range g.binding.Status.Clusters {
		cs := &g.binding.Status.Clusters[i]
		if cs.ActiveRayCluster != "" || cs.PendingRayCluster != "" {
			held[cs.Name] = demand
		}
	}
	return held
}

// refusedForPlanning maps the refused members that hold no copy of the RayService to what
// refused it, for the planner to leave them out. A member that refused an update but still
// runs an earlier copy stays placed: leaving it out would delete a serving copy because of a
// refused change.
func refusedForPlanning(g *group) map[string]string {
	if len(g.refusals) == 0 {
		return nil
	}
	out := map[string]string{}
	for name, r := range g.refusals {
		if m := g.members[name]; m == nil || m.readErr != nil || m.copy == nil {
			out[name] = refusalText(r)
		}
	}
	return out
}

// ungranted maps each MemberCluster the namespace has no grant for to the message saying so,
// for the planner (placement.Input.Ungranted).
func ungranted(g *group) map[string]string {
	out := map[string]string{}
	for name, mc := range g.memberClusters {
		if !g.grants.Member(name, mc.Labels) {
			out[name] = g.grants.MemberMissing(name)
		}
	}
	return out
}

// previousLeaving are the binding's leaving entries by cluster.
func previousLeaving(g *group) map[string]*fleetv1alpha1.ClusterLeaving {
	out := map[string]*fleetv1alpha1.ClusterLeaving{}
	if g.binding == nil {
		return out
	}
	for i := range g.binding.Status.Clusters {
		if l := g.binding.Status.Clusters[i].Leaving; l != nil {
			out[g.binding.Status.Clusters[i].Name] = l
		}
	}
	return out
}

// failingOver names a cluster the RayService is failing over from right now: one the binding
// lists as FailedOver while a cluster it is placed on does not serve yet. "" when none. It
// reads f's previous leaving entries and members' serving states.
func failingOver(g *group, f *facts) string {
	prev := f.previousLeaving
	for _, name := range slices.Sorted(maps.Keys(prev)) {
		if prev[name].Reason != fleetv1alpha1.LeaveFailedOver {
			continue
		}
		for _, placed := range g.placedBefore() {
			mf, ok := f.members[placed]
			if !ok || mf.unreadable || !mf.serving.done {
				return name
			}
		}
	}
	return ""
}

// blueGreenInFlight is the BlueGreen rollout the binding records, while the policy still rolls
// out BlueGreen; nil otherwise (a policy changed to another type mid-rollout places blue and
// green together as one set, and its own rollout takes over).
func blueGreenInFlight(g *group) *fleetv1alpha1.BlueGreenStatus {
	if !isBlueGreen(g.policy.pp) || g.binding == nil || g.binding.Status.Rollout == nil {
		return nil
	}
	return g.binding.Status.Rollout.BlueGreen
}
