package rollout

import (
	"cmp"
	"maps"
	"slices"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Baseline is the revision a new target rolls out from: the one recorded (a rollout moves it
// to its target when it completes), else (a status written before baselines were kept) the
// good revision, else, while nothing is recorded, the revision most clusters are done on (a
// first revision, soaked or not). "" means the RayService runs nowhere yet, the only case in
// which a change goes everywhere at once.
func Baseline(previous *fleetv1alpha1.RolloutStatus, clusters []Cluster) string {
	if previous != nil {
		if rev := cmp.Or(previous.BaselineRevision, previous.GoodRevision); rev != "" {
			return rev
		}
	}
	return mostDone(clusters)
}

// mostDone is the revision the most clusters are done on, ties going by name; "" when no
// cluster is done on any.
func mostDone(clusters []Cluster) string {
	return mostRun(clusters, func(c Cluster) bool { return c.Done })
}

// mostRun is the revision the most clusters for which counts holds carry, ties going by name;
// "" when none carries one.
func mostRun(clusters []Cluster, counts func(Cluster) bool) string {
	count := map[string]int{}
	for _, c := range clusters {
		if c.Revision != "" && counts(c) {
			count[c.Revision]++
		}
	}
	best := ""
	for _, rev := range slices.Sorted(maps.Keys(count)) {
		if count[rev] > count[best] {
			best = rev
		}
	}
	return best
}

// rollbackTo is the revision undo and automatic rollback return to, which clusters with no
// copy or on a failed revision get: the good revision, or while no revision is good yet, the
// baseline (the revision that runs, soaked or not).
func (p *planner) rollbackTo() string {
	return cmp.Or(p.status.GoodRevision, p.status.BaselineRevision)
}

// runsNowhere reports whether the target goes to every cluster at once because nothing runs
// that it could roll out from: no cluster is done on any revision, or the first revision is
// still coming up or soaking on the clusters (every one runs it or nothing) and is the target.
func (p *planner) runsNowhere() bool {
	switch {
	case p.rollbackTo() == "":
		return true
	case p.status.GoodRevision != "" || p.status.BaselineRevision != p.in.Target:
		return false
	}
	return !slices.ContainsFunc(p.members, func(m *member) bool {
		return m.Revision != "" && m.Revision != p.in.Target
	})
}
