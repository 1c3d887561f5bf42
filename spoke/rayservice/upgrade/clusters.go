// Package upgrade holds the RayService reconciler's decisions about its RayClusters, as pure
// functions of what the reconciler read: whether a new pending cluster is needed, whether a
// cluster is updated in place and how, and, for NewClusterWithIncrementalUpgrade, how traffic
// and target_capacity move between the active and the pending cluster, when the pending one is
// promoted and when an upgrade is rolled back. Nothing here calls the API server or reads a
// clock; the reconciler executes what these functions decide.
// Of the repository it imports only shared/: no client, never hub/ or the reconciler.
package upgrade

import (
	"maps"
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// Role says which of a RayService's two clusters a decision is about.
type Role int

const (
	// NoCluster means neither cluster.
	NoCluster Role = iota
	// Active is the cluster named in status.activeServiceStatus: the one serving.
	Active
	// Pending is the cluster named in status.pendingServiceStatus: the one being prepared.
	Pending
)

// String names the role for logs and events.
func (r Role) String() string {
	switch r {
	case Active:
		return "active"
	case Pending:
		return "pending"
	default:
		return "none"
	}
}

// conditionTrue reports whether the RayService condition t is True.
func conditionTrue(st *rayv1.RayServiceStatuses, t rayv1.RayServiceConditionType) bool {
	return meta.IsStatusConditionTrue(st.Conditions, string(t))
}

// UpgradeInProgress reports whether the status says both clusters exist (an upgrade runs).
func UpgradeInProgress(st *rayv1.RayServiceStatuses) bool {
	return conditionTrue(st, rayv1.UpgradeInProgress)
}

// RollbackInProgress reports whether an incremental upgrade is being rolled back.
func RollbackInProgress(st *rayv1.RayServiceStatuses) bool {
	return conditionTrue(st, rayv1.RollbackInProgress)
}

// SpecMatches reports whether rc was built from spec, replicas and the other fields a running
// cluster may change by itself (autoscaler, Kueue) aside.
func SpecMatches(spec *rayv1.RayClusterSpec, rc *rayv1.RayCluster) bool {
	goal, err := rayspec.ClusterSpecHash(spec)
	return err == nil && goal == rc.Annotations[labels.HashWithoutReplicas]
}

// OnlyGroupsAppended reports whether spec is rc's spec with worker groups appended at the end
// (or equal to it): the one spec change KubeRay applies to a running cluster. rc records how
// many groups it was built with in ray.io/num-worker-groups.
func OnlyGroupsAppended(spec *rayv1.RayClusterSpec, rc *rayv1.RayCluster) bool {
	built, err := strconv.Atoi(rc.Annotations[labels.NumWorkerGroups])
	if err != nil || built < 0 || built > len(spec.WorkerGroupSpecs) {
		return false
	}
	prefix := spec.DeepCopy()
	prefix.WorkerGroupSpecs = prefix.WorkerGroupSpecs[:built]
	return SpecMatches(prefix, rc)
}

// ShouldPrepareNewCluster reports whether the RayService needs a new pending cluster: it has
// none at all, or its goal spec differs from the newest cluster (the pending one, else the
// active one) in a way that cannot be applied in place and the upgrade strategy allows a new
// cluster. zeroDowntimeDefault is ENABLE_ZERO_DOWNTIME, used when no strategy is set.
//
// pendingServing means the Services already point at the pending cluster (its promotion is
// under way); no cluster is prepared then, nor while a rollback runs.
func ShouldPrepareNewCluster(spec *rayv1.RayServiceSpec, st *rayv1.RayServiceStatuses, active, pending *rayv1.RayCluster,
	pendingServing, zeroDowntimeDefault bool,
) bool {
	if pendingServing || RollbackInProgress(st) {
		return false
	}
	newest := pending
	if newest == nil {
		newest = active
	}
	if newest == nil {
		return true
	}
	goal := &spec.RayClusterSpec
	if SpecMatches(goal, newest) || OnlyGroupsAppended(goal, newest) {
		return false
	}
	return rayspec.ZeroDowntime(spec, zeroDowntimeDefault)
}

// ShouldUpdateCluster reports whether rc (playing role) is updated in place from the
// RayService's spec: its suspension was toggled, worker groups were appended, or, for the
// active cluster, it was built by another operator version. The active cluster is frozen while
// an upgrade is in progress: the new spec belongs to the pending cluster then.
//
// Two changes KubeRay never applies are applied here, because a user (and the hub, which moves
// a blue/green's capacity through them) expects them to reach the running cluster: worker-group
// counts, which the spec hash leaves out — replicas, minReplicas and maxReplicas without the
// autoscaler, only minReplicas and maxReplicas under it (replicas is the autoscaler's then);
// and, for the active cluster under upgradeStrategy None (or ENABLE_ZERO_DOWNTIME=false:
// zeroDowntimeDefault), any spec change — "None" means no new cluster, so the change goes to
// the existing one. Other spec changes get a new cluster (ShouldPrepareNewCluster).
func ShouldUpdateCluster(spec *rayv1.RayServiceSpec, st *rayv1.RayServiceStatuses, rc *rayv1.RayCluster, role Role,
	kubeRayVersion string, zeroDowntimeDefault bool,
) bool {
	if rc == nil {
		return false
	}
	if role == Active {
		if UpgradeInProgress(st) {
			return false
		}
		if rc.Annotations[labels.KubeRayVersion] != kubeRayVersion {
			return true
		}
	}
	goal := &spec.RayClusterSpec
	// A toggled suspension (Kueue admitting or preempting the workload) must reach the
	// cluster: the hash ignores it, so without this the cluster would stay suspended.
	if ptr.Deref(goal.Suspend, false) != ptr.Deref(rc.Spec.Suspend, false) {
		return true
	}
	if SpecMatches(goal, rc) {
		return scaleChanged(goal, rc, !rayspec.Autoscaling(goal))
	}
	if OnlyGroupsAppended(goal, rc) {
		return true
	}
	return role == Active && !rayspec.ZeroDowntime(spec, zeroDowntimeDefault)
}

// scaleChanged reports whether a worker group of spec asks for other minReplicas or
// maxReplicas than rc's group of the same name, or, with replicas, other replicas.
func scaleChanged(spec *rayv1.RayClusterSpec, rc *rayv1.RayCluster, replicas bool) bool {
	have := make(map[string]*rayv1.WorkerGroupSpec, len(rc.Spec.WorkerGroupSpecs))
	for i := range rc.Spec.WorkerGroupSpecs {
		have[rc.Spec.WorkerGroupSpecs[i].GroupName] = &rc.Spec.WorkerGroupSpecs[i]
	}
	for i := range spec.WorkerGroupSpecs {
		want := &spec.WorkerGroupSpecs[i]
		got, ok := have[want.GroupName]
		if !ok {
			continue
		}
		if replicas && !ptr.Equal(want.Replicas, got.Replicas) {
			return true
		}
		if !ptr.Equal(want.MinReplicas, got.MinReplicas) || !ptr.Equal(want.MaxReplicas, got.MaxReplicas) {
			return true
		}
	}
	return false
}

// InPlaceUpdate returns current updated towards goal (the cluster built afresh from the
// RayService): goal's spec, goal's labels and annotations added to current's. Under the
// in-tree autoscaler its worker groups are AutoscaledWorkerGroups. Labels and annotations
// other controllers put on the cluster are kept.
func InPlaceUpdate(current, goal *rayv1.RayCluster) *rayv1.RayCluster {
	out := current.DeepCopy()
	out.Spec = *goal.Spec.DeepCopy()
	if rayspec.Autoscaling(&goal.Spec) {
		out.Spec.WorkerGroupSpecs = AutoscaledWorkerGroups(current.Spec.WorkerGroupSpecs, goal.Spec.WorkerGroupSpecs)
	}
	out.Labels = mergeMaps(current.Labels, goal.Labels)
	out.Annotations = mergeMaps(current.Annotations, goal.Annotations)
	return out
}

// AutoscaledWorkerGroups returns goal's worker groups where each group current already has
// keeps its replicas, clamped into goal's [minReplicas, maxReplicas], and its workersToDelete.
//
// Unlike KubeRay (which replaces the spec whole, its own TODO), the autoscaler's replicas and
// workersToDelete are not reset to the RayService's: that would scale the cluster back to its
// initial size. The clamp makes new bounds take effect at once, as the autoscaler would.
func AutoscaledWorkerGroups(current, goal []rayv1.WorkerGroupSpec) []rayv1.WorkerGroupSpec {
	have := make(map[string]*rayv1.WorkerGroupSpec, len(current))
	for i := range current {
		have[current[i].GroupName] = &current[i]
	}
	out := make([]rayv1.WorkerGroupSpec, len(goal))
	for i := range goal {
		g := goal[i].DeepCopy()
		if h, ok := have[g.GroupName]; ok {
			if h.Replicas != nil {
				g.Replicas = ptr.To(clampReplicas(*h.Replicas, g.MinReplicas, g.MaxReplicas))
			}
			g.ScaleStrategy.WorkersToDelete = append([]string(nil), h.ScaleStrategy.WorkersToDelete...)
		}
		out[i] = *g
	}
	return out
}

// clampReplicas brings n into [minReplicas, maxReplicas] (a missing minReplicas is 0, a
// missing maxReplicas unbounded) the way the RayCluster reconciler counts the Pods to keep
// (demand.WorkerGroupReplicas), inverted bounds included, so the two never disagree.
func clampReplicas(n int32, minReplicas, maxReplicas *int32) int32 {
	switch lo := ptr.Deref(minReplicas, 0); {
	case n < lo:
		return lo
	case maxReplicas != nil && n > *maxReplicas:
		return *maxReplicas
	default:
		return n
	}
}

// mergeMaps returns base with over's entries set; nil when both are empty.
func mergeMaps(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}
