package leaving

import (
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// notChosen is why a cluster that still qualifies is leaving: fewer clusters asked for, or a
// better fit.
const notChosen = "still qualifies, but not among the clusters chosen"

// Cluster is what the caller read of one cluster the binding lists.
type Cluster struct {
	// Name is the member's name.
	Name string
	// Placed is set when the decision places the RayService there.
	Placed bool
	// Gone is set when the member left the fleet (its MemberCluster is gone): nothing to keep.
	Gone bool
	// Unreadable is set when the member's copy could not be read.
	Unreadable bool
	// HasCopy is set when a copy of that name was read there.
	HasCopy bool
	// Foreign is set when the copy read there is not the hub's.
	Foreign bool
	// Ready is the member's Ready condition.
	Ready bool
	// Previous is the binding's leaving entry for it; nil when it was not leaving.
	Previous *fleetv1alpha1.ClusterLeaving
	// Rejected is the placement's reason for not choosing it; "" when it gave none.
	Rejected string
	// LeaveAs is the reason a BlueGreen rollout gave it up for in this decision; "" when none.
	LeaveAs fleetv1alpha1.LeaveReason
	// Draining is set while the cluster may still get traffic (traffic.Draining).
	Draining bool
}

// Input is everything the leaving decision is made from.
type Input struct {
	// Clusters are the clusters the binding lists, each once.
	Clusters []Cluster
	// Now is the decision's time; a fresh entry's Since is it, to the second.
	Now time.Time
	// PurgeMode is the policy's (PurgeModeOf).
	PurgeMode fleetv1alpha1.PurgeMode
	// NotDone lists the placed clusters that are not done, each with why.
	NotDone []string
	// Placed is how many clusters the decision places the RayService on.
	Placed int
}

// Entry is a leaving cluster: what the binding records of it, and why it left.
type Entry struct {
	// Leaving is its entry in the binding: the reason it left for and since when.
	Leaving fleetv1alpha1.ClusterLeaving
	// Fresh is set when the RayService left the cluster in this decision.
	Fresh bool
	// Why is the placement's reason for not choosing the cluster; "" for an entry a
	// BlueGreen rollout gave its own reason, and for one kept by Keep.
	Why string
}

// Result is what happens to the leaving clusters' copies.
type Result struct {
	// Entries are the leaving clusters, by name.
	Entries map[string]Entry
	// Actions are the leaving clusters' actions, by cluster; nil from Keep, which acts on none.
	Actions map[string]propagation.Action
	// Kept are the leaving clusters whose copy stays for now, sorted.
	Kept []string
	// Retained are the leaving clusters whose copy purge mode Never keeps, sorted.
	Retained []string
}

// Entries are the clusters no longer placed that still hold a copy of ours, could not be
// read, or are not Ready. A cluster leaves as FailedOver when its member is not Ready at that
// moment (placement left it past its toleration), else as Moved; the reason and time stay what
// they were when it left.
func Entries(in Input) map[string]Entry {
	out := map[string]Entry{}
	for _, c := range in.Clusters {
		if c.Placed || c.Gone {
			continue
		}
		if !c.Unreadable && c.HasCopy && c.Foreign {
			continue
		}
		// No copy is believed only from a Ready member: the cache of one that is not may be
		// new or stale, and forgetting a copy there would leave it to the orphan sweep.
		if !c.Unreadable && !c.HasCopy && c.Ready {
			continue
		}
		out[c.Name] = entry(c, in.Now)
	}
	return out
}

// entry is c's entry: the binding's as it is, or a fresh one left now.
func entry(c Cluster, now time.Time) Entry {
	why := c.Rejected
	if why == "" {
		why = notChosen
	}
	switch {
	case c.Previous != nil:
		return Entry{Leaving: *c.Previous, Why: why}
	case c.LeaveAs != "":
		return Entry{Leaving: left(c.LeaveAs, now), Fresh: true}
	case !c.Ready:
		return Entry{Leaving: left(fleetv1alpha1.LeaveFailedOver, now), Fresh: true, Why: why}
	default:
		return Entry{Leaving: left(fleetv1alpha1.LeaveMoved, now), Fresh: true, Why: why}
	}
}

// left is a leaving entry for reason, since now to the second (as the API stores it).
func left(reason fleetv1alpha1.LeaveReason, now time.Time) fleetv1alpha1.ClusterLeaving {
	return fleetv1alpha1.ClusterLeaving{Reason: reason, Since: metav1.NewTime(now.Truncate(time.Second))}
}

// Plan decides, per leaving cluster, whether its copy goes now (propagation.ForLeaving): only once
// every placed cluster is done, and after a failover as the purge mode says.
func Plan(in Input) Result {
	entries := Entries(in)
	actions := make(map[string]propagation.Action, len(entries))
	var kept, retained []string
	for _, c := range sortedClusters(in.Clusters) {
		dep, ok := entries[c.Name]
		if !ok {
			continue
		}
		a := propagation.ForLeaving(propagation.Leaving{
			Reason: dep.Leaving.Reason, PurgeMode: in.PurgeMode,
			Reachable: !c.Unreadable, Ready: c.Ready,
			NotDone: in.NotDone, Placed: in.Placed,
			Draining: c.Draining,
		})
		actions[c.Name] = a
		if a.Kind != propagation.Remove {
			kept = append(kept, c.Name)
		}
		if a.Reason == propagation.ReasonRetained {
			retained = append(retained, c.Name)
		}
	}
	return Result{Entries: entries, Actions: actions, Kept: kept, Retained: retained}
}

// Keep is the result for a decision that places nothing new (the RayService or its policy is
// invalid): every cluster the binding lists as leaving stays leaving, as it is. Nothing is
// removed and nothing is forgotten, so neither this hub nor its orphan sweep loses track of a
// copy.
func Keep(in Input) Result {
	entries := map[string]Entry{}
	var kept []string
	for _, c := range sortedClusters(in.Clusters) {
		if c.Previous != nil && !c.Gone && !c.Placed {
			entries[c.Name] = Entry{Leaving: *c.Previous}
			kept = append(kept, c.Name)
		}
	}
	return Result{Entries: entries, Kept: kept}
}

// sortedClusters are clusters by name, so that Kept and Retained come out sorted.
func sortedClusters(clusters []Cluster) []Cluster {
	byName := make(map[string]Cluster, len(clusters))
	for _, c := range clusters {
		byName[c.Name] = c
	}
	out := make([]Cluster, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// PurgeModeOf is the policy's purge mode; Graceful when it sets none.
func PurgeModeOf(pp *fleetv1alpha1.PlacementPolicy) fleetv1alpha1.PurgeMode {
	if pp == nil || pp.Spec.Failover == nil || pp.Spec.Failover.PurgeMode == "" {
		return fleetv1alpha1.PurgeGraceful
	}
	return pp.Spec.Failover.PurgeMode
}
