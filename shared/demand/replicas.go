// Package demand computes what a RayCluster asks of a Kubernetes cluster: how many worker Pods
// and how much CPU, memory and accelerators. The numbers are KubeRay v1.6.2's, so the spoke can
// fill a RayCluster's status exactly as KubeRay does (desiredWorkerReplicas, desiredCPU, ...)
// and the hub can place a RayService on a member with room for it.
// It imports no other RayFleet package; like all of shared/, never hub/, spoke/ or cmd/.
package demand

import (
	"math"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
)

// WorkerGroupReplicas is the number of worker Pods a group should have: replicas clamped to
// [minReplicas, maxReplicas] (a missing replicas means minReplicas, a missing minReplicas 0, a
// missing maxReplicas unbounded), times numOfHosts; 0 for a suspended group. numOfHosts is used
// as stored (the CRD defaults it to 1), so 0 hosts means 0 Pods, as in KubeRay's status.
func WorkerGroupReplicas(g *rayv1.WorkerGroupSpec) int32 {
	if suspended(g) {
		return 0
	}
	minReplicas := ptr.Deref(g.MinReplicas, 0)
	maxReplicas := ptr.Deref(g.MaxReplicas, math.MaxInt32)
	replicas := minReplicas
	if g.Replicas != nil && *g.Replicas >= minReplicas {
		replicas = min(*g.Replicas, maxReplicas)
	}
	return saturate(int64(replicas) * hosts(g))
}

// DesiredWorkers is the number of worker Pods the cluster should have (status.desiredWorkerReplicas).
func DesiredWorkers(spec *rayv1.RayClusterSpec) int32 {
	var total int64
	for i := range spec.WorkerGroupSpecs {
		total += int64(WorkerGroupReplicas(&spec.WorkerGroupSpecs[i]))
	}
	return saturate(total)
}

// MinWorkers is the sum of minReplicas × numOfHosts over the groups that are not suspended
// (status.minWorkerReplicas).
func MinWorkers(spec *rayv1.RayClusterSpec) int32 {
	var total int64
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		if !suspended(g) {
			total += int64(ptr.Deref(g.MinReplicas, 0)) * hosts(g)
		}
	}
	return saturate(total)
}

// MaxWorkers is the sum of maxReplicas × numOfHosts over the groups that are not suspended, a
// missing maxReplicas counting as MaxInt32 (status.maxWorkerReplicas). The sum saturates at
// MaxInt32 instead of overflowing.
func MaxWorkers(spec *rayv1.RayClusterSpec) int32 {
	var total int64
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		if !suspended(g) {
			total += int64(ptr.Deref(g.MaxReplicas, math.MaxInt32)) * hosts(g)
		}
	}
	return saturate(total)
}

func suspended(g *rayv1.WorkerGroupSpec) bool { return ptr.Deref(g.Suspend, false) }

// hosts is numOfHosts as stored; a negative value (never valid) counts as 0 rather than
// producing negative Pod counts.
func hosts(g *rayv1.WorkerGroupSpec) int64 { return int64(max(g.NumOfHosts, 0)) }

// saturate clamps a count to the int32 range the status fields use.
func saturate(n int64) int32 {
	return int32(min(max(n, 0), math.MaxInt32))
}
