package placement

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// toleration is the outcome of tolerate.
type toleration struct {
	// notes say, per tolerated member in input order, since when it is not ready and until when
	// it keeps the RayService, or why it keeps it past that.
	notes []string
	// wake is the earliest end of a toleration; zero when none is tolerated.
	wake time.Time
	// frozen says why failover is frozen; "" when it is not.
	frozen string
}

// tolerate counts a member that holds the RayService (one of in.Current) and is not Ready as
// Ready until it has been not Ready (since Member.NotReadySince) for the policy's toleration. A
// member that blips (an API server restart, a slow heartbeat) must not cost the user its
// workload: without this the planner drops it at once. Past its toleration a member is left
// (the RayService fails over) only one at a time, the longest not Ready first, never while
// another failover is in flight (in.FailingOver), and never while failover is frozen (see
// frozen), nor while the hub's probe finds its serve endpoint answering (in.Serving). A
// member with a zero NotReadySince (one leaving the fleet on purpose) is not tolerated.
// members is changed in place.
func tolerate(members []Member, in *Input) toleration {
	freeze := frozen(members, &in.Policy)
	var out toleration
	var expired []*Member
	for i := range members {
		m := &members[i]
		if m.Ready || m.NotReadySince.IsZero() || !slices.Contains(in.Current, m.Name) {
			continue
		}
		until := m.NotReadySince.Add(in.Policy.Toleration)
		if !in.Now.Before(until) && in.Serving[m.Name] {
			// Not a candidate for failover at all, so it holds no other member back either.
			out.notes = append(out.notes, fmt.Sprintf("%s: %s since %s, past its toleration, kept: its serve endpoint answers the hub's probe",
				m.Name, m.NotReadyReason, stamp(m.NotReadySince)))
			m.Ready, m.NotReadyReason = true, ""
			continue
		}
		if !in.Now.Before(until) {
			expired = append(expired, m)
			continue
		}
		out.notes = append(out.notes, fmt.Sprintf("%s: %s since %s, tolerated until %s",
			m.Name, m.NotReadyReason, stamp(m.NotReadySince), stamp(until)))
		if out.wake.IsZero() || until.Before(out.wake) {
			out.wake = until
		}
		m.Ready, m.NotReadyReason = true, ""
	}
	slices.SortFunc(expired, func(a, b *Member) int {
		return cmp.Or(a.NotReadySince.Compare(b.NotReadySince), strings.Compare(a.Name, b.Name))
	})
	for i, m := range expired {
		var why string
		switch {
		case freeze != "":
			// Reported only when it holds a failover back: the RayServices a fleet-wide fault
			// does not touch have nothing to say about it.
			why, out.frozen = "failover frozen", freeze
		case in.FailingOver != "":
			why = "waits for the failover from " + in.FailingOver
		case i > 0:
			why = "waits for the failover from " + expired[0].Name
		default:
			continue // this one fails over
		}
		out.notes = append(out.notes, fmt.Sprintf("%s: %s since %s, past its toleration, kept: %s",
			m.Name, m.NotReadyReason, stamp(m.NotReadySince), why))
		m.Ready, m.NotReadyReason = true, ""
	}
	return out
}

// frozen says why failover is frozen for policy p, "" when it is not: more than half of the
// members p selects (by selector and names, taints and capacity aside), and at least two, are
// not Ready. Those members are judged before any toleration.
func frozen(members []Member, p *Policy) string {
	var selected int
	var notReady []string
	for i := range members {
		m := &members[i]
		if len(p.Names) > 0 && !slices.Contains(p.Names, m.Name) {
			continue
		}
		if p.Selector != nil && !p.Selector.Matches(labels.Set(m.Labels)) {
			continue
		}
		selected++
		if !m.Ready {
			notReady = append(notReady, m.Name)
		}
	}
	if len(notReady) < 2 || 2*len(notReady) <= selected {
		return ""
	}
	slices.Sort(notReady)
	named := notReady
	if len(named) > maxFrozenNames {
		named = append(slices.Clone(named[:maxFrozenNames]), fmt.Sprintf("and %d more", len(notReady)-maxFrozenNames))
	}
	return fmt.Sprintf("%d of the %d members the policy selects are not Ready (%s): failover is frozen until at most half are",
		len(notReady), selected, strings.Join(named, ", "))
}

// maxFrozenNames bounds how many members the freeze message names.
const maxFrozenNames = 5

// stamp formats a time as the messages show it.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// messageNotes are what the decision's message adds: why failover is frozen, then the notes.
func (t *toleration) messageNotes() []string {
	if t.frozen == "" {
		return t.notes
	}
	return append([]string{t.frozen}, t.notes...)
}

// withNotes appends the tolerated members' notes to the decision's message.
func withNotes(msg string, notes []string) string {
	if len(notes) == 0 {
		return msg
	}
	return msg + "; " + strings.Join(notes, "; ")
}
