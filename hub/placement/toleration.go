package placement

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// toleration is the outcome of tolerate.
type toleration struct {
	// notes say, per tolerated member in input order, since when it is not ready and until when
	// it keeps the RayService.
	notes []string
	// wake is the earliest end of a toleration; zero when none is tolerated.
	wake time.Time
}

// tolerate counts a member that holds the RayService (one of current) and is not Ready as
// Ready until it has been not Ready (since Member.NotReadySince) for window. A member that
// blips (an API server restart, a slow heartbeat) must not cost the user its workload: without
// this the planner drops it at once and its copy is deleted as soon as it is reachable again.
// A member with a zero NotReadySince (one leaving the fleet on purpose) is not tolerated.
// members is changed in place.
func tolerate(members []Member, current []string, window time.Duration, now time.Time) toleration {
	var out toleration
	for i := range members {
		m := &members[i]
		if m.Ready || m.NotReadySince.IsZero() || !slices.Contains(current, m.Name) {
			continue
		}
		since := m.NotReadySince
		until := since.Add(window)
		if !now.Before(until) {
			continue
		}
		out.notes = append(out.notes, fmt.Sprintf("%s: %s since %s, tolerated until %s",
			m.Name, m.NotReadyReason, since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339)))
		if out.wake.IsZero() || until.Before(out.wake) {
			out.wake = until
		}
		m.Ready, m.NotReadyReason = true, ""
	}
	return out
}

// withNotes appends the tolerated members' notes to the decision's message.
func withNotes(msg string, notes []string) string {
	if len(notes) == 0 {
		return msg
	}
	return msg + "; " + strings.Join(notes, "; ")
}
