package fleet

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/rayfleet/rayfleet/hub/placement"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// tolerationOf is how long a member holding a RayService placed by pp may be not Ready before
// the RayService leaves it.
func tolerationOf(pp *fleetv1alpha1.PlacementPolicy) time.Duration {
	secs := fleetv1alpha1.DefaultFailoverTolerationSeconds
	if pp != nil && pp.Spec.Failover != nil && pp.Spec.Failover.TolerationSeconds != nil {
		secs = max(*pp.Spec.Failover.TolerationSeconds, 0)
	}
	return time.Duration(secs) * time.Second
}

// tolerated is the outcome of tolerateNotReady.
type tolerated struct {
	// notes say, per tolerated member in name order, since when it is not ready and until when
	// it keeps the RayService; they are appended to the Placed message.
	notes []string
	// wake is the earliest end of a toleration; zero when none is tolerated. The RayService
	// must be planned again then, even if nothing else happens.
	wake time.Time
}

// tolerateNotReady counts a member that holds the RayService (one of holders) and is not Ready
// as Ready until its Ready condition has been other than True for toleration. A member that
// blips (an API server restart, a slow heartbeat) must not cost the user its workload: without
// this the planner drops it at once and its copy is deleted as soon as it is reachable again.
// A member being deleted is leaving the fleet on purpose and is not tolerated. Without a Ready
// condition the member's creation is the start of the wait. members is changed in place.
func tolerateNotReady(members []placement.Member, mcs map[string]*fleetv1alpha1.MemberCluster,
	holders []string, toleration time.Duration, now time.Time) tolerated {
	var out tolerated
	for i := range members {
		m := &members[i]
		mc := mcs[m.Name]
		if m.Ready || mc == nil || !slices.Contains(holders, m.Name) || !mc.DeletionTimestamp.IsZero() {
			continue
		}
		since := mc.CreationTimestamp.Time
		if ready := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionReady); ready != nil {
			since = ready.LastTransitionTime.Time
		}
		until := since.Add(toleration)
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
