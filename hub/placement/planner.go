package placement

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rayfleet/rayfleet/shared/conditions"
)

// Plan chooses the members a RayService runs on. Members that are not ready, not selected by
// the policy, tainted against it or short of free capacity are filtered out. Of the rest, the
// current members come first (a running copy moves only when its member stops qualifying), then
// the others by score: room left after placement, less for PreferNoSchedule taints, and, with
// SpreadBy, members in topology domains not chosen yet before any other. Equal scores go by
// name, so equal input gives an equal decision whatever the order of Members. When fewer
// members qualify than the policy asks for, all that qualify are chosen and Placed is false.
// A current member not ready for less than Policy.Toleration counts as ready (see tolerate).
func Plan(in Input) Decision {
	in.Members = slices.Clone(in.Members)
	tol := tolerate(in.Members, &in)
	want := max(in.Policy.Clusters, 1)
	current := toSet(in.Current)
	named := toSet(in.Policy.Names)
	seen := make(map[string]int, len(in.Members))
	for i := range in.Members {
		seen[in.Members[i].Name]++
	}

	asked := askedFor(in.Demand)
	rejected := map[string]string{}
	var cands []*candidate
	for i := range in.Members {
		m := &in.Members[i]
		if seen[m.Name] > 1 {
			// Which copy is the real member is unknowable; using neither keeps the
			// decision independent of their order.
			rejected[m.Name] = reasonDuplicate
			continue
		}
		c, reason := filter(m, &in, named, asked, current[m.Name])
		if c == nil {
			rejected[m.Name] = reason
			continue
		}
		cands = append(cands, c)
	}

	chosen := choose(rank(cands, score(cands, in.Demand, asked)), want, in.Policy.SpreadBy)
	clusters := make([]string, 0, len(chosen))
	for _, c := range chosen {
		clusters = append(clusters, c.member.Name)
	}
	slices.Sort(clusters)
	d := Decision{
		Clusters:  clusters,
		Placed:    len(clusters) == want,
		Message:   conditions.Truncate(withNotes(message(len(clusters), want, len(seen), rejected), tol.messageNotes())),
		Rejected:  rejected,
		Tolerated: tol.notes,
		Wake:      tol.wake,
		Frozen:    tol.frozen,
	}
	if !d.Placed {
		// A member readmitted soon may be the one missing: plan again then.
		for i := range in.Members {
			m := &in.Members[i]
			if until, waiting := readmitting(m, &in.Policy, in.Now, current[m.Name]); waiting && m.Ready &&
				(d.Wake.IsZero() || until.Before(d.Wake)) {
				d.Wake = until
			}
		}
	}
	return d
}

// rank orders candidates best first: higher score, then name.
func rank(cands []*candidate, scores []float64) []*candidate {
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		return strings.Compare(cands[a].member.Name, cands[b].member.Name)
	})
	ranked := make([]*candidate, len(cands))
	for i, j := range order {
		ranked[i] = cands[j]
	}
	return ranked
}

// choose takes want candidates from ranked: current members first, then new ones, each group
// in rank order but, with spreadBy, a member in a domain not chosen yet before the others.
// The current members' domains count as chosen when new members are picked.
func choose(ranked []*candidate, want int, spreadBy string) []*candidate {
	var kept, fresh []*candidate
	for _, c := range ranked {
		if c.current {
			kept = append(kept, c)
		} else {
			fresh = append(fresh, c)
		}
	}
	used := map[string]bool{}
	chosen := pick(nil, kept, want, spreadBy, used)
	return pick(chosen, fresh, want-len(chosen), spreadBy, used)
}

// pick appends up to n members of pool to chosen, recording their domains in used.
func pick(chosen, pool []*candidate, n int, spreadBy string, used map[string]bool) []*candidate {
	taken := make([]bool, len(pool))
	for ; n > 0; n-- {
		i := next(pool, taken, spreadBy, used)
		if i < 0 {
			break
		}
		taken[i] = true
		chosen = append(chosen, pool[i])
		if d, ok := domain(pool[i], spreadBy); ok {
			used[d] = true
		}
	}
	return chosen
}

// next is the index of the best member of pool not taken yet, preferring one in an unused
// domain; -1 when pool is exhausted.
func next(pool []*candidate, taken []bool, spreadBy string, used map[string]bool) int {
	first := -1
	for i, c := range pool {
		if taken[i] {
			continue
		}
		if spreadBy == "" {
			return i
		}
		if first < 0 {
			first = i
		}
		if d, ok := domain(c, spreadBy); ok && !used[d] {
			return i
		}
	}
	return first
}

// domain is the member's topology domain. A member without the label is in no known domain:
// choosing it spreads over nothing, so it never counts as a new domain.
func domain(c *candidate, spreadBy string) (string, bool) {
	if spreadBy == "" {
		return "", false
	}
	d, ok := c.member.Labels[spreadBy]
	return d, ok
}

// message is "N/W clusters chosen", followed, when short, by every rejection in name order and
// by the fleet's size when it is smaller than asked for.
func message(chosen, want, members int, rejected map[string]string) string {
	head := fmt.Sprintf("%d/%d clusters chosen", chosen, want)
	if chosen == want {
		return head
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(rejected)) {
		parts = append(parts, name+": "+rejected[name])
	}
	switch {
	case members == 0:
		parts = append(parts, "the fleet has no member clusters")
	case members < want:
		parts = append(parts, fmt.Sprintf("the fleet has only %d member clusters", members))
	}
	// A fleet with many rejected members must not make the hub's status write fail.
	return conditions.Join(head, parts...)
}

func toSet(items []string) map[string]bool {
	set := make(map[string]bool, len(items))
	for _, s := range items {
		set[s] = true
	}
	return set
}
