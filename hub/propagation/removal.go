package propagation

import (
	"slices"
)

// ToRemove returns, sorted and without duplicates, the clusters holding a copy that the
// placement no longer includes: the copies to delete. A cluster still in placed is never
// returned, whatever its state. An unreachable cluster is not returned either, even when it
// is no longer placed: the delete would fail anyway, and an unreachable member is exactly the
// case where acting on a stale view must not destroy anything. Its copy is returned by a later
// call once the cluster is reachable again, so the caller needs no memory of it beyond its
// placement record.
func ToRemove(placed []string, holding []string, unreachable map[string]bool) []string {
	var out []string
	for _, c := range holding {
		if c == "" || unreachable[c] || slices.Contains(placed, c) {
			continue
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
