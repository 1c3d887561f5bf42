package revision

import (
	"cmp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// History is the revisions of one hub RayService, oldest first. Its Get, ByNumber, Latest and
// NextNumber return pointers into it: callers copy before changing one.
type History []appsv1.ControllerRevision

// NewHistory is revisions sorted by .Revision, as a copy. Two revisions share a number only when
// one was created from a stale read; the older object (by creation time, then name) sorts
// first, so the order is the same at every read.
func NewHistory(revisions []appsv1.ControllerRevision) History {
	h := slices.Clone(History(revisions))
	slices.SortStableFunc(h, compare)
	return h
}

// compare orders revisions by number, then creation time, then name.
func compare(a, b appsv1.ControllerRevision) int {
	if c := cmp.Compare(a.Revision, b.Revision); c != 0 {
		return c
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// Get is the revision named name, or nil.
func (h History) Get(name string) *appsv1.ControllerRevision {
	for i := range h {
		if h[i].Name == name {
			return &h[i]
		}
	}
	return nil
}

// ByNumber is the revision numbered n (`kubectl rollout undo --to-revision` style), or nil; of
// two with the number, the later one.
func (h History) ByNumber(n int64) *appsv1.ControllerRevision {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Revision == n {
			return &h[i]
		}
	}
	return nil
}

// Latest is the revision with the highest number, or nil for an empty history; it does not
// rely on h being sorted.
func (h History) Latest() *appsv1.ControllerRevision {
	var latest *appsv1.ControllerRevision
	for i := range h {
		if latest == nil || compare(h[i], *latest) > 0 {
			latest = &h[i]
		}
	}
	return latest
}

// NextNumber is the number a new revision gets: one more than the highest, 1 for the first.
func (h History) NextNumber() int64 {
	var highest int64
	for i := range h {
		highest = max(highest, h[i].Revision)
	}
	return highest + 1
}

// Prune is the names of the revisions to delete, oldest first, so that at most limit remain
// (a negative limit counts as 0). A name in keep (the rollout's target, the last good revision,
// any revision a member still runs) is never among them, even when the kept ones alone exceed
// limit.
func Prune(history []appsv1.ControllerRevision, keep map[string]bool, limit int) []string {
	sorted := NewHistory(history)
	excess := len(sorted) - max(limit, 0)
	var names []string
	for i := range sorted {
		if excess <= 0 {
			break
		}
		if keep[sorted[i].Name] {
			continue
		}
		names = append(names, sorted[i].Name)
		excess--
	}
	return names
}
