package fleet

// Phase: plan. Rollout: the target revision and which revision each placed cluster gets.

import (
	"errors"
	"fmt"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/revision"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// reasonRevisionTooLarge (Ready=False on the hub RayService, Placed=False on the binding): the
// spec and overrides do not fit in one ControllerRevision.
const reasonRevisionTooLarge = "RevisionTooLarge"

// rolloutDecision is the rollout part of a decision.
type rolloutDecision struct {
	// target is the newest revision (the spec and overrides now) and its content.
	target        string
	targetContent *revision.Content
	// contents are the contents of the revisions the decision applies.
	contents *revisionContents
	// plan is the planner's decision; nil when no rollout was planned (invalid, nothing placed).
	plan *rollout.Decision
	// clusters are the placed clusters as the planner saw them (done or not, and why).
	clusters []rollout.Cluster
	// historyLimit is how many revisions to keep.
	historyLimit int
	// overlays are the capacity of each coloured cluster's copy while a capacity-following
	// blue/green moves it; nil otherwise.
	overlays map[string]copyOverlay
}

// revisionContents are revisions' contents by name, the target's and those decoded from the
// history. The one mutable part of a rollout decision: a memo filled while copies are built.
type revisionContents struct {
	byName map[string]*revision.Content
}

// rolloutResult is what the rollout step decided: the rollout, and the placement as the
// rollout leaves it (a green set added, the clusters a BlueGreen rollout gave up taken out).
type rolloutResult struct {
	rollout *rolloutDecision
	placed  []string
	// colors are the BlueGreen colours: placement's, or the green set chosen for a rollout
	// that starts; nil when none.
	colors *placement.Colors
	// leaveAs are the clusters the rollout gave up, with the reason they leave for.
	leaveAs map[string]fleetv1alpha1.LeaveReason
	// reserve is the green set's reservation intent when one is chosen here.
	reserve []placement.Intent
}

// planRollout computes the target revision and plans which revision each placed cluster
// gets; decideCopy then builds each cluster's copy of that revision. A BlueGreen rollout that
// starts chooses its green set here, and the clusters it gives up leave the placement.
func (r *Reconciler) planRollout(g *group, f *facts, pl placementResult, pp *fleetv1alpha1.PlacementPolicy) (rolloutResult, error) {
	var spec *fleetv1alpha1.RolloutStrategy
	if pp != nil {
		spec = pp.Spec.Rollout
	}
	strategy, err := rollout.StrategyOf(spec)
	if err != nil { // policy.Check ran StrategyOf already; this is only a safeguard
		return rolloutResult{}, fmt.Errorf("PlacementPolicy %s/%s: rollout: %w", g.key.Namespace, g.policy.name, err)
	}
	content := &revision.Content{Spec: *g.hub.Spec.DeepCopy(), Overrides: pl.overrides}
	// Built only to refuse a content too large for one object before anything is applied.
	if _, err = revision.New(g.hub, content, g.history.NextNumber(), r.client.Scheme()); err != nil {
		return rolloutResult{}, err
	}
	hash, err := revision.Hash(content)
	if err != nil {
		return rolloutResult{}, err
	}
	target := revision.Name(g.hub.Name, hash)
	contents := &revisionContents{byName: map[string]*revision.Content{target: content}}
	capacity := capacityFollows(strategy, f)
	if capacity {
		// Refused before anything moves: without the set there is nothing to size the copies by.
		if _, err := rollout.FullSet(&content.Spec); err != nil {
			return rolloutResult{}, fmt.Errorf("PlacementPolicy %s/%s: rollout.blueGreen.capacity needs the RayService's full set: %w",
				g.key.Namespace, g.policy.name, err)
		}
	}

	var previous *fleetv1alpha1.RolloutStatus
	var recorded []fleetv1alpha1.ClusterStatus
	approval := ""
	if g.binding != nil {
		previous, recorded = g.binding.Status.Rollout, g.binding.Status.Clusters
		approval = g.binding.Annotations[labels.ApprovedStage]
	}
	placed := slices.Clone(pl.placed)
	cols := pl.colors
	var reserve []placement.Intent
	clusters := make([]rollout.Cluster, 0, len(placed))
	for _, name := range placed {
		clusters = append(clusters, r.rolloutCluster(g, f, contents, name))
	}
	if strategy.Type == fleetv1alpha1.RolloutBlueGreen && cols == nil && rollout.NeedsGreen(previous, target, clusters) {
		var green placement.Intent
		in := pl.in
		if capacity {
			// Green starts at the surge: it needs room for that first step, not its whole set.
			surge := strategy.BlueGreen.Surge
			in.Green = greenDemand(g.hub, surge, fmt.Sprintf("green's first step (%d%% of its set)", surge))
		}
		cols, green = placement.ChooseGreen(g.reserved, g.key, in, placed, pl.reserve)
		reserve = []placement.Intent{green}
		for _, name := range cols.Green {
			placed = append(placed, name)
			clusters = append(clusters, r.rolloutCluster(g, f, contents, name))
		}
		slices.Sort(placed)
	}
	bgIn := blueGreenInput(g, f, cols, placed, clusters)
	if capacity {
		bgIn.GreenRunning, bgIn.BlueRunning = r.runningShares(g, f, contents, bgIn.Green, bgIn.Blue, clusters)
	}
	plan := rollout.Plan(rollout.Input{
		Now: g.now, Strategy: strategy, Target: target, Previous: previous,
		Clusters: clusters, ClusterPhases: rollout.PhasesOf(recorded),
		Paused: g.hub.Annotations[labels.Paused] == "true", Approval: approval,
		BlueGreen: bgIn,
	})
	// The clusters a BlueGreen rollout gives up leave the placement, with its reason.
	placed, clusters = rollout.WithoutLeaving(&plan, placed, clusters)
	var leaveAs map[string]fleetv1alpha1.LeaveReason
	if len(plan.Leave) > 0 {
		leaveAs = plan.Leave
	}
	ro := &rolloutDecision{
		target: target, targetContent: content, contents: contents,
		plan: &plan, clusters: clusters,
		historyLimit: rollout.HistoryLimit(spec),
		overlays:     r.capacityOverlays(g, f, &plan, contents, target, strategy.BlueGreen.Surge),
	}
	return rolloutResult{rollout: ro, placed: placed, colors: cols, leaveAs: leaveAs, reserve: reserve}, nil
}

// rolloutCluster is what the planner knows of one placed cluster: whether it can be worked
// on, which revision its copy carries and whether it runs it (Ray-aware, soak aside).
func (r *Reconciler) rolloutCluster(g *group, f *facts, contents *revisionContents, name string) rollout.Cluster {
	m, mf := g.members[name], f.members[name]
	c := rollout.Cluster{Name: name}
	if m == nil || m.mc == nil {
		c.NotDone = "the member has left the fleet"
		return c
	}
	c.Labels = m.mc.Labels
	c.Ready = !mf.unreadable && mf.ready
	if m.readErr != nil {
		c.NotDone = m.readErr.Error()
		return c
	}
	if m.copy == nil || propagation.OwnershipOf(r.opts.HubName, g.hub, m.copy) == propagation.Foreign {
		c.NotDone = "no copy yet"
		return c
	}
	c.Revision = m.copy.Annotations[labels.Revision]
	c.Endpoints = m.copy.Status.NumServeEndpoints
	desired, err := r.copyFrom(g, f, contents, name, c.Revision)
	if err != nil {
		// Without the spec it runs there is no bound to hold its count to: it counts as one.
		c.Endpoints = 0
		c.NotDone = err.Error()
		return c
	}
	// A member's count weighs its share of the traffic: it is held to what the spec can have.
	c.Endpoints = min(c.Endpoints, validation.MaxServeEndpoints(&desired.Spec.RayClusterSpec))
	if desired, err = asResized(g, m.copy, desired, name); err != nil {
		c.NotDone = err.Error()
		return c
	}
	state := doneFor(m.copy, desired, c.Revision, mf.serving)
	c.Done, c.NotDone, c.Blocked = state.done, state.why, state.blocked
	return withProbe(c, mf.backend)
}

// withProbe is c as the data plane sees it: a cluster whose serve endpoint fails the hub's
// probe is not done, though its member reports it serving, so a blue/green shift pauses (and
// reverts at its deadline) while green's endpoint fails.
func withProbe(c rollout.Cluster, b dataplane.Backend) rollout.Cluster {
	if c.Done && b.Probe == dataplane.Failing {
		c.Done, c.NotDone = false, "serve endpoint failing: "+b.ProbeErr
	}
	return c
}

// copyOf is the member copy of revision rev for cluster name: the revision's spec with its
// overrides applied, annotated with the revision's name.
func (r *Reconciler) copyOf(g *group, f *facts, ro *rolloutDecision, name, rev string) (*rayv1.RayService, error) {
	return r.copyFrom(g, f, ro.contents, name, rev)
}

// copyFrom is copyOf with the revisions' contents taken from contents.
func (r *Reconciler) copyFrom(g *group, f *facts, contents *revisionContents, name, rev string) (*rayv1.RayService, error) {
	content, err := contents.of(g, rev)
	if err != nil {
		return nil, err
	}
	hub := g.hub.DeepCopy()
	hub.Spec = *content.Spec.DeepCopy()
	desired, err := propagation.MemberRayService(r.opts.HubName, hub, name, g.members[name].mc.Labels, content.Overrides)
	if err != nil {
		return nil, err
	}
	desired.Annotations[labels.Revision] = rev
	if f.exportsServe {
		desired.Annotations[labels.ServeExport] = name
	}
	return desired, nil
}

// of is the content of revision rev: the target's, or decoded from g's history once.
func (c *revisionContents) of(g *group, rev string) (*revision.Content, error) {
	if content := c.byName[rev]; content != nil {
		return content, nil
	}
	if rev == "" {
		return nil, errors.New("the copy names no revision")
	}
	cr := g.history.Get(rev)
	if cr == nil {
		return nil, fmt.Errorf("revision %s is not in the RayService's history", rev)
	}
	content, err := revision.Decode(cr)
	if err != nil {
		return nil, err
	}
	c.byName[rev] = content
	return content, nil
}

// keep are the revisions pruning must leave: the target, the good one, and any a member runs.
func (ro *rolloutDecision) keep(g *group) map[string]bool {
	keep := map[string]bool{ro.target: true}
	if ro.plan != nil {
		keep[ro.plan.Status.GoodRevision] = true
		keep[ro.plan.Status.BaselineRevision] = true
		keep[ro.plan.Status.FailedRevision] = true
		for _, rev := range ro.plan.Apply {
			keep[rev] = true
		}
	}
	for _, m := range g.members {
		if m.copy != nil {
			keep[m.copy.Annotations[labels.Revision]] = true
		}
	}
	return keep
}
