package fleet

// Phase: plan. Capacity: what each colour of a capacity-following blue/green runs, and the
// capacity its copies are given (hub/rollout decides both; this reads and applies them).

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/runningreplicas"
)

// copyCapacity is a member copy's full set and the running-replicas report of its member.
type copyCapacity struct {
	desired *rayv1.RayService
	set     rollout.CapacitySet
	report  runningreplicas.Replicas
}

// capacityOf reads the full set of the copy of revision rev for cluster name and what its
// member reports running. A report that does not parse counts as nothing running: the
// traffic then waits, and the copy's capacity is moved as if it held nothing.
func (r *Reconciler) capacityOf(g *group, f *facts, contents *revisionContents, name, rev string) (copyCapacity, error) {
	desired, err := r.copyFrom(g, f, contents, name, rev)
	if err != nil {
		return copyCapacity{}, err
	}
	set, err := rollout.FullSet(&desired.Spec)
	if err != nil {
		return copyCapacity{}, fmt.Errorf("cluster %s: %w", name, err)
	}
	cc := copyCapacity{desired: desired, set: set}
	if m := g.members[name]; m != nil && m.copy != nil {
		cc.report, _ = runningreplicas.Parse(m.copy.Annotations[labels.RunningReplicas])
	}
	return cc, nil
}

// runningShares are the shares of their full sets green and blue run: the least over each
// colour's members (a colour with none runs nothing), each member judged on the set of the
// revision its copy carries.
func (r *Reconciler) runningShares(g *group, f *facts, contents *revisionContents, green, blue []string, clusters []rollout.Cluster) (greenRunning, blueRunning int32) {
	revisions := make(map[string]string, len(clusters))
	for _, c := range clusters {
		revisions[c.Name] = c.Revision
	}
	share := func(names []string) int32 {
		if len(names) == 0 {
			return 0
		}
		least := int32(100)
		for _, name := range names {
			cc, err := r.capacityOf(g, f, contents, name, revisions[name])
			if err != nil {
				return 0
			}
			least = min(least, rollout.RunningShareOf(cc.set, cc.report))
		}
		return least
	}
	return share(green), share(blue)
}

// capacityOverlays are the capacity each coloured cluster's copy is given by plan's step:
// the copy of the revision plan applies there, resized (rollout.MemberOverlays). Nil when the
// plan moves no capacity. A cluster whose set cannot be read gets its error, and no copy.
func (r *Reconciler) capacityOverlays(g *group, f *facts, plan *rollout.Decision, contents *revisionContents, target string, surge int32) map[string]copyOverlay {
	if plan == nil || plan.Capacity == nil {
		return nil
	}
	out := make(map[string]copyOverlay, len(plan.Colors))
	members := make(map[string]rollout.CapacityMember, len(plan.Colors))
	for name, color := range plan.Colors {
		rev := target
		if planned, ok := plan.Apply[name]; ok {
			rev = planned
		}
		cc, err := r.capacityOf(g, f, contents, name, rev)
		if err != nil {
			out[name] = copyOverlay{err: err}
			continue
		}
		out[name] = copyOverlay{set: cc.set}
		members[name] = rollout.CapacityMember{Color: color, Set: cc.set, Held: cc.report.Held}
	}
	for name, ov := range rollout.MemberOverlays(*plan.Capacity, surge, members) {
		o := out[name]
		o.overlay = ov
		out[name] = o
	}
	return out
}

// copyOverlay is one copy's capacity: the step's part of it, on the copy's full set.
type copyOverlay struct {
	set     rollout.CapacitySet
	overlay rollout.MemberOverlay
	err     error
}

// resized is desired with o applied: its spec resized in place, SpecHash that of the resized
// spec, BaseSpecHash the full-size one's.
func (o copyOverlay) resized(desired *rayv1.RayService) (*rayv1.RayService, error) {
	if o.err != nil {
		return nil, fmt.Errorf("capacity: %w", o.err)
	}
	spec, err := rollout.Overlay(&desired.Spec, o.set, o.overlay.Replicas, o.overlay.TargetCapacity)
	if err != nil {
		return nil, err
	}
	hash, err := propagation.SpecHash(spec)
	if err != nil {
		return nil, err
	}
	out := desired.DeepCopy()
	out.Spec = *spec
	out.Annotations[labels.BaseSpecHash] = desired.Annotations[labels.SpecHash]
	out.Annotations[labels.SpecHash] = hash
	return out, nil
}

// asResized is desired as the rollout judges a member copy that carries it resized: the copy's
// own SpecHash (its spec is desired's, BaseSpecHash says), and the Serve config at the capacity
// the binding last gave the cluster's colour, as the member runs it once it has caught up. The
// worker counts need no such care: the running cluster's hash leaves them out. desired itself
// when the copy is not desired's resized, or no capacity was recorded for it.
func asResized(g *group, member, desired *rayv1.RayService, name string) (*rayv1.RayService, error) {
	if member == nil || member.Annotations[labels.BaseSpecHash] == "" ||
		member.Annotations[labels.BaseSpecHash] != desired.Annotations[labels.SpecHash] {
		return desired, nil
	}
	out := desired.DeepCopy()
	out.Annotations[labels.SpecHash] = member.Annotations[labels.SpecHash]
	capacity, ok := recordedCapacity(g, name)
	if !ok {
		return out, nil
	}
	set, err := rollout.FullSet(&desired.Spec)
	if err != nil {
		return nil, err
	}
	spec, err := rollout.Overlay(&desired.Spec, set, nil, rollout.ServeTargetCapacity(set, capacity))
	if err != nil {
		return nil, err
	}
	out.Spec.ServeConfigV2 = spec.ServeConfigV2
	return out, nil
}

// recordedCapacity is the capacity the binding last gave cluster name's colour, false when it
// recorded none for it.
func recordedCapacity(g *group, name string) (int32, bool) {
	if g.binding == nil || g.binding.Status.Rollout == nil {
		return 0, false
	}
	bg := g.binding.Status.Rollout.BlueGreen
	if bg == nil || bg.Capacity == nil {
		return 0, false
	}
	for _, c := range bg.Green {
		if c == name {
			return bg.Capacity.Green, true
		}
	}
	for _, c := range bg.Blue {
		if c == name {
			return bg.Capacity.Blue, true
		}
	}
	return 0, false
}

// capacityFollows reports whether the strategy moves capacity with the traffic: asked for, and
// a route for it to follow.
func capacityFollows(s rollout.Strategy, f *facts) bool {
	return s.Type == fleetv1alpha1.RolloutBlueGreen && s.BlueGreen.Capacity && f.traffic != nil
}

// greenDemand is what a green copy needs at capacity percent of its set, described as what:
// the hub RayService resized as a lone green copy would be. Nil when its set cannot be read
// (the rollout refuses it; placement then plans by the whole copy).
func greenDemand(hub *rayv1.RayService, capacity int32, what string) *placement.ColorDemand {
	set, err := rollout.FullSet(&hub.Spec)
	if err != nil {
		return nil
	}
	// A surge of 100 leaves the bound out: there is no blue beside a lone green.
	ov := rollout.MemberOverlays(rollout.CapacityTargets{Direction: fleetv1alpha1.CapacityForward, Green: capacity}, 100,
		map[string]rollout.CapacityMember{"green": {Color: fleetv1alpha1.ColorGreen, Set: set}})["green"]
	spec, err := rollout.Overlay(&hub.Spec, set, ov.Replicas, ov.TargetCapacity)
	if err != nil {
		return nil
	}
	resized := hub.DeepCopy()
	resized.Spec = *spec
	return &placement.ColorDemand{Demand: placement.DemandOf(resized), For: what}
}
