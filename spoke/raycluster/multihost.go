package raycluster

import (
	"context"
	"fmt"
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/demand"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// reconcileMultiHostGroup treats each replica of a multi-host group (numOfHosts Pods sharing a
// replica name) as one unit: it is created whole, and deleted whole when any host is missing,
// broken or asked to go.
func (r *Reconciler) reconcileMultiHostGroup(ctx context.Context, s *scope, g *rayv1.WorkerGroupSpec, pods []corev1.Pod) error {
	rc := s.cluster
	hosts := int(g.NumOfHosts)
	groups, unnamed := replicaGroups(pods)

	// Pods outside any replica, incomplete and unhealthy replicas cannot serve a multi-host
	// workload; replicas the autoscaler named go whole too.
	broken := append([]corev1.Pod(nil), unnamed...)
	var requested []corev1.Pod
	for _, name := range sortedKeys(groups) {
		switch {
		case len(groups[name]) < hosts || anyBroken(groups[name]):
			broken = append(broken, groups[name]...)
		case anyRequested(groups[name], g):
			requested = append(requested, groups[name]...)
		default:
			continue
		}
		delete(groups, name)
	}
	if err := r.deletePods(ctx, rc, g.GroupName, broken, "its multi-host replica is incomplete or unhealthy"); err != nil {
		return err
	}
	if err := r.deletePods(ctx, rc, g.GroupName, requested, "its multi-host replica is listed in scaleStrategy.workersToDelete"); err != nil {
		return err
	}
	if len(g.ScaleStrategy.WorkersToDelete) > 0 {
		if err := r.clearWorkersToDelete(ctx, rc, g); err != nil {
			return err
		}
	}
	if n := len(broken) + len(requested); n > 0 {
		// Replacements are created once the deletions are observed.
		return fmt.Errorf("deleted %d Pods of replicas of group %s (%d incomplete or unhealthy, %d requested)",
			n, g.GroupName, len(broken), len(requested))
	}

	desired := int(demand.WorkerGroupReplicas(g))
	if desired%hosts != 0 {
		return fmt.Errorf("group %s wants %d Pods, not a multiple of numOfHosts %d", g.GroupName, desired, hosts)
	}
	diff := desired/hosts - len(groups)
	switch {
	case diff > 0:
		var first []corev1.Pod
		for _, name := range sortedKeys(groups) {
			first = append(first, groups[name][0])
		}
		var replicas []builder.Replica
		for _, idx := range freeIndices(first, diff) {
			name := builder.ReplicaGroupName(g.GroupName)
			for host := range hosts {
				replicas = append(replicas, builder.Replica{Name: name, Index: idx, HostIndex: host})
			}
		}
		return r.createInBatches(ctx, s, g, replicas)
	case diff < 0 && scaleDownAllowed(rc, r.opts.RandomPodDelete):
		return r.deletePods(ctx, rc, g.GroupName, highestReplicas(groups, -diff), "the group is scaled down")
	}
	return nil
}

func anyBroken(pods []corev1.Pod) bool {
	for i := range pods {
		if del, _ := shouldDeletePod(&pods[i], rayv1.WorkerNode); del {
			return true
		}
	}
	return false
}

func anyRequested(pods []corev1.Pod, g *rayv1.WorkerGroupSpec) bool {
	for i := range pods {
		for _, name := range g.ScaleStrategy.WorkersToDelete {
			if pods[i].Name == name {
				return true
			}
		}
	}
	return false
}

// highestReplicas returns the Pods of the n replicas with the highest indices, so the indices
// in use stay dense from zero.
func highestReplicas(groups map[string][]corev1.Pod, n int) []corev1.Pod {
	names := sortedKeys(groups)
	index := func(name string) int {
		i, err := strconv.Atoi(groups[name][0].Labels[labels.WorkerReplicaIndex])
		if err != nil {
			return -1
		}
		return i
	}
	// Simple selection: n is small (replicas of one group).
	var out []corev1.Pod
	for ; n > 0 && len(names) > 0; n-- {
		best := 0
		for i := range names {
			if index(names[i]) > index(names[best]) {
				best = i
			}
		}
		out = append(out, groups[names[best]]...)
		names = append(names[:best], names[best+1:]...)
	}
	return out
}
