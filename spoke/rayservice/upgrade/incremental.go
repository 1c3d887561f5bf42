package upgrade

import (
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
)

// An incremental upgrade (NewClusterWithIncrementalUpgrade) moves a RayService from its active
// cluster to its pending one in steps, recorded in the status of each:
//
//   - targetCapacity is the Serve target_capacity submitted to that cluster: the share of its
//     Serve replicas it runs. The pending cluster's grows by maxSurgePercent while the sum of
//     both is at most 100; once the sum exceeds 100 the active one shrinks by maxSurgePercent.
//     Neither moves while traffic still catches up with the pending capacity.
//   - trafficRoutedPercent is the cluster's weight on the HTTPRoute. Every intervalSeconds the
//     pending cluster gains stepSizePercent, never past its targetCapacity, and only while its
//     Serve applications are ready.
//
// The upgrade is complete when the pending cluster has all the traffic and the active cluster
// no capacity; the pending cluster is then promoted. A goal spec that changes mid-upgrade rolls
// back first: the same steps in reverse, towards the active cluster.

// Defaults of the status fields before anything was recorded, as KubeRay reads them.
const (
	fullPercent            = 100
	defaultActiveTraffic   = fullPercent
	defaultPendingTraffic  = 0
	defaultActiveCapacity  = fullPercent
	defaultPendingCapacity = 0
)

// Weights are the HTTPRoute backend weights of the two clusters, in percent.
type Weights struct {
	Active, Pending int32
}

// NextTraffic returns the HTTPRoute weights for this reconcile: the current ones, or one step
// further when intervalSeconds passed since traffic last moved towards the cluster gaining it.
// Forward steps wait for pendingReady; a rollback steps back regardless, since the active
// cluster kept serving all along.
func NextTraffic(st *rayv1.RayServiceStatuses, opts *rayv1.ClusterUpgradeOptions, pendingReady bool, now time.Time) Weights {
	active, pending := &st.ActiveServiceStatus, &st.PendingServiceStatus
	w := Weights{
		Active:  ptr.Deref(active.TrafficRoutedPercent, defaultActiveTraffic),
		Pending: ptr.Deref(pending.TrafficRoutedPercent, defaultPendingTraffic),
	}
	if opts == nil {
		return w
	}
	activeCap := ptr.Deref(active.TargetCapacity, defaultActiveCapacity)
	pendingCap := ptr.Deref(pending.TargetCapacity, defaultPendingCapacity)
	rollback := RollbackInProgress(st)

	// The cluster gaining traffic is at its capacity: the next step is a capacity change.
	if (!rollback && w.Pending == pendingCap) || (rollback && w.Active == activeCap) {
		return w
	}
	last := pending.LastTrafficMigratedTime
	if rollback {
		last = active.LastTrafficMigratedTime
	}
	interval := time.Duration(ptr.Deref(opts.IntervalSeconds, 0)) * time.Second
	if last != nil && now.Sub(last.Time) < interval {
		return w
	}
	step := ptr.Deref(opts.StepSizePercent, 0)
	switch {
	case rollback:
		w.Active = min(fullPercent, w.Active+step, activeCap)
		w.Pending = fullPercent - w.Active
	case pendingReady:
		w.Pending = min(fullPercent, w.Pending+step, pendingCap)
		w.Active = fullPercent - w.Pending
	}
	return w
}

// CapacityChange is one target_capacity update: which cluster gets which value.
type CapacityChange struct {
	Cluster Role
	Goal    int32
}

// NextCapacity returns the target_capacity update due in this reconcile, if any. ok is false
// when nothing is due: traffic is still catching up with the capacities, or the upgrade (or
// the rollback) has reached its end state.
func NextCapacity(st *rayv1.RayServiceStatuses, opts *rayv1.ClusterUpgradeOptions) (c CapacityChange, ok bool) {
	if opts == nil {
		return CapacityChange{}, false
	}
	active, pending := &st.ActiveServiceStatus, &st.PendingServiceStatus
	activeCap := ptr.Deref(active.TargetCapacity, defaultActiveCapacity)
	pendingCap := ptr.Deref(pending.TargetCapacity, defaultPendingCapacity)
	surge := ptr.Deref(opts.MaxSurgePercent, fullPercent)

	if RollbackInProgress(st) {
		if activeCap != ptr.Deref(active.TrafficRoutedPercent, 0) {
			return CapacityChange{}, false // traffic is still moving back
		}
		switch {
		case activeCap+pendingCap > fullPercent:
			c = CapacityChange{Cluster: Pending, Goal: max(0, pendingCap-surge)}
		case activeCap < fullPercent:
			c = CapacityChange{Cluster: Active, Goal: min(fullPercent, activeCap+surge)}
		default:
			return CapacityChange{}, false
		}
		return c, c.Goal != capacityOf(c.Cluster, activeCap, pendingCap)
	}

	if activeCap == 0 && pendingCap == fullPercent {
		return CapacityChange{}, false // complete
	}
	if pendingCap != ptr.Deref(pending.TrafficRoutedPercent, defaultPendingTraffic) {
		return CapacityChange{}, false // traffic is still moving to the pending cluster
	}
	if activeCap+pendingCap > fullPercent {
		c = CapacityChange{Cluster: Active, Goal: max(0, activeCap-surge)}
	} else {
		c = CapacityChange{Cluster: Pending, Goal: min(fullPercent, pendingCap+surge)}
	}
	return c, c.Goal != capacityOf(c.Cluster, activeCap, pendingCap)
}

func capacityOf(r Role, active, pending int32) int32 {
	if r == Active {
		return active
	}
	return pending
}

// Complete reports whether an incremental upgrade has moved everything to the pending
// cluster: it has all the traffic and the active cluster no capacity left. A rollback is never
// complete in this sense; the pending cluster it leaves behind is not promoted.
func Complete(st *rayv1.RayServiceStatuses) bool {
	return st.PendingServiceStatus.RayClusterName != "" && !RollbackInProgress(st) &&
		ptr.Deref(st.ActiveServiceStatus.TargetCapacity, -1) == 0 &&
		ptr.Deref(st.PendingServiceStatus.TrafficRoutedPercent, -1) == fullPercent
}

// RollbackComplete reports whether a rollback has brought everything back to the active
// cluster: full capacity and traffic there, none on the pending cluster.
func RollbackComplete(st *rayv1.RayServiceStatuses) bool {
	a, p := &st.ActiveServiceStatus, &st.PendingServiceStatus
	return ptr.Deref(a.TargetCapacity, -1) == fullPercent && ptr.Deref(a.TrafficRoutedPercent, -1) == fullPercent &&
		ptr.Deref(p.TargetCapacity, -1) == 0 && ptr.Deref(p.TrafficRoutedPercent, -1) == 0
}

// RollbackTransition is what happens to the RollbackInProgress condition in this reconcile.
type RollbackTransition int

const (
	// RollbackUnchanged leaves the condition as it is.
	RollbackUnchanged RollbackTransition = iota
	// RollbackStart raises it: the goal spec left the pending cluster behind mid-upgrade.
	RollbackStart
	// RollbackCancel drops it: the goal spec is the pending cluster's again.
	RollbackCancel
)

// DecideRollback compares the goal spec with the pending cluster during an incremental
// upgrade. A goal that no longer matches the pending cluster (the user reverted, or asked for a
// third spec) first brings all traffic back to the active cluster; only then may another
// cluster be prepared. A goal that matches the pending cluster again resumes the upgrade.
func DecideRollback(spec *rayv1.RayServiceSpec, st *rayv1.RayServiceStatuses, pending *rayv1.RayCluster) RollbackTransition {
	inProgress := RollbackInProgress(st)
	if SpecMatches(&spec.RayClusterSpec, pending) {
		if inProgress {
			return RollbackCancel
		}
		return RollbackUnchanged
	}
	if inProgress {
		return RollbackUnchanged
	}
	return RollbackStart
}
