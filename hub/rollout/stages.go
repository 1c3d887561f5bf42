package rollout

import (
	"cmp"
	"slices"
	"strconv"

	k8slabels "k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// stagePlan is one stage of this decision with its clusters in update order.
type stagePlan struct {
	// def is the stage's definition; the implicit stage has no selector.
	def Stage
	// members are the stage's placed clusters in update order: the order recorded when the
	// stage started (clusters placed since then after it), else the sorting order now.
	members []*member
	// record is the stage's status once started, nil before.
	record *fleetv1alpha1.StageStatus
	// concurrency is how many of members may be in flight (or not Ready) at once.
	concurrency int
}

// buildStages assigns every member to its stage. A started stage keeps the clusters and the
// order it recorded; the others are assigned by selector (the first stage selecting a cluster
// owns it, the last stage takes what none selects) and sorted. Stages without a placed cluster
// are left out: they have nothing to update and nothing to approve. recorded are the stages
// the previous decision started for the same target.
func buildStages(s Strategy, members []*member, recorded []fleetv1alpha1.StageStatus) []*stagePlan {
	defs := s.Stages
	if len(defs) == 0 || defs[len(defs)-1].Name != fleetv1alpha1.ImplicitStageName {
		defs = append(slices.Clip(defs), Stage{Name: fleetv1alpha1.ImplicitStageName})
	}
	stages := make([]*stagePlan, len(defs))
	byName := make(map[string]*member, len(members))
	for _, m := range members {
		byName[m.Name] = m
	}
	for i, def := range defs {
		stages[i] = &stagePlan{def: def}
		if j := slices.IndexFunc(recorded, func(r fleetv1alpha1.StageStatus) bool { return r.Name == def.Name }); j >= 0 {
			rec := recorded[j]
			stages[i].record = &rec
			for _, name := range rec.Clusters {
				if m := byName[name]; m != nil && m.stage == nil {
					m.stage = stages[i]
					stages[i].members = append(stages[i].members, m)
				}
			}
		}
	}
	var fresh []*member
	for _, m := range members {
		if m.stage == nil {
			m.stage = ownerOf(stages, m)
			fresh = append(fresh, m)
		}
	}
	sortMembers(fresh, s.SortingLabelKey)
	for _, m := range fresh {
		m.stage.members = append(m.stage.members, m)
	}
	kept := stages[:0]
	for _, st := range stages {
		if len(st.members) == 0 {
			continue
		}
		st.concurrency = scaled(s.MaxUnavailable, len(members))
		if st.def.MaxConcurrency != nil {
			st.concurrency = scaled(*st.def.MaxConcurrency, len(st.members))
		}
		kept = append(kept, st)
	}
	return kept
}

// ownerOf is the first stage selecting m, or the last stage, which takes every cluster the
// others leave.
func ownerOf(stages []*stagePlan, m *member) *stagePlan {
	for _, st := range stages[:len(stages)-1] {
		if st.def.Selector != nil && st.def.Selector.Matches(k8slabels.Set(m.Labels)) {
			return st
		}
	}
	return stages[len(stages)-1]
}

// sortMembers orders clusters for updating: by the sorting label's value (integer values first,
// as numbers, then the others as text, then clusters without the label), else by fewest serve
// endpoints; then by name.
func sortMembers(ms []*member, key string) {
	slices.SortFunc(ms, func(a, b *member) int {
		if key == "" {
			return cmp.Or(cmp.Compare(a.Endpoints, b.Endpoints), cmp.Compare(a.Name, b.Name))
		}
		return cmp.Or(compareLabel(a.Labels, b.Labels, key), cmp.Compare(a.Name, b.Name))
	})
}

// compareLabel compares two clusters' values of key.
func compareLabel(a, b map[string]string, key string) int {
	va, oka := a[key]
	vb, okb := b[key]
	switch {
	case oka != okb:
		if oka {
			return -1
		}
		return 1
	case !oka:
		return 0
	}
	// Integers first, by value, then the other values as text: a total order, so that
	// "9" < "10" without making a mix of numbers and words circular.
	na, erra := strconv.ParseInt(va, 10, 64)
	nb, errb := strconv.ParseInt(vb, 10, 64)
	switch {
	case erra == nil && errb == nil:
		return cmp.Compare(na, nb)
	case erra == nil:
		return -1
	case errb == nil:
		return 1
	}
	return cmp.Compare(va, vb)
}

// names are the stage's clusters in update order.
func (st *stagePlan) names() []string {
	out := make([]string, len(st.members))
	for i, m := range st.members {
		out[i] = m.Name
	}
	return out
}

// done reports whether every cluster of the stage is done on the target.
func (st *stagePlan) done() bool {
	return !slices.ContainsFunc(st.members, func(m *member) bool { return m.phase.Phase != fleetv1alpha1.ClusterDone })
}

// waiting reports whether a cluster of the stage waits for its turn: not started on the
// target and not in flight.
func (st *stagePlan) waiting() bool {
	return slices.ContainsFunc(st.members, func(m *member) bool {
		return m.phase.Phase == fleetv1alpha1.ClusterPending && !inFlight(m)
	})
}
