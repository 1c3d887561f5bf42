package rollout

import (
	"slices"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// PhasesOf are the clusters' rollout phases as the binding recorded them, by name: the input
// the next plan advances from. It is never nil.
func PhasesOf(clusters []fleetv1alpha1.ClusterStatus) map[string]ClusterPhase {
	out := make(map[string]ClusterPhase, len(clusters))
	for i := range clusters {
		cs := &clusters[i]
		p := ClusterPhase{Phase: cs.RolloutPhase}
		if cs.PhaseTime != nil {
			p.Since = cs.PhaseTime.Time
		}
		if cs.UpdateTime != nil {
			p.Started = cs.UpdateTime.Time
		}
		out[cs.Name] = p
	}
	return out
}

// HistoryLimit is how many revisions of a RayService to keep under spec (nil: the defaults).
func HistoryLimit(spec *fleetv1alpha1.RolloutStrategy) int {
	if spec != nil && spec.RevisionHistoryLimit != nil {
		return int(*spec.RevisionHistoryLimit)
	}
	return int(fleetv1alpha1.DefaultRevisionHistoryLimit)
}

// WithoutLeaving are placed and clusters without the clusters d gives up (Decision.Leave): a
// BlueGreen rollout that completes or is undone takes them out of the placement. The inputs
// are not changed; with nothing to leave they are returned as they are.
func WithoutLeaving(d *Decision, placed []string, clusters []Cluster) ([]string, []Cluster) {
	if len(d.Leave) == 0 {
		return placed, clusters
	}
	gone := func(name string) bool { _, ok := d.Leave[name]; return ok }
	placed = slices.DeleteFunc(slices.Clone(placed), gone)
	clusters = slices.DeleteFunc(slices.Clone(clusters), func(c Cluster) bool { return gone(c.Name) })
	return placed, clusters
}
