package rayservice

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/runningreplicas"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
)

// The running-replicas annotation tells the hub how much of a member's copy really serves, so
// a blue/green can move traffic onto green only as far as green's replicas run.

// runningReplicas decides the value of the RunningReplicas annotation for active, the cluster
// that serves: its worker Pods running per group of its spec (workerPods lists its worker
// Pods) and, per deployment, the Serve replicas RUNNING. serve holds the counts of the Serve
// read of active this reconcile; without one (read is false: the read was not due, failed, or
// active is frozen during a NewCluster upgrade) the counts current records stand, since
// nothing says they changed.
func runningReplicas(current string, active *rayv1.RayCluster, workerPods []corev1.Pod, serve map[string]int32, read bool) (string, error) {
	running, held := workerCounts(active, workerPods)
	r := runningreplicas.Replicas{Workers: running, Serve: serve, Held: held}
	if !read {
		r.Serve = nil
		// An unreadable value (written by somebody else) is dropped: the next read restores it.
		if prev, err := runningreplicas.Parse(current); err == nil {
			r.Serve = prev.Serve
		}
	}
	return runningreplicas.Format(r)
}

// workerCounts counts, for each worker group of rc's spec that has any, its worker Pods that
// run and those it holds. Running are Running and Ready, the test KubeRay's
// readyWorkerReplicas applies, and not being deleted, since those are about to stop serving
// (readyWorkerReplicas still counts them). Held are those that have not ended, deleted or not:
// until a Pod is gone its resources are not free for another colour. A multi-host group counts
// its Pods, as readyWorkerReplicas does. Pods of groups the spec no longer has do not count.
func workerCounts(rc *rayv1.RayCluster, pods []corev1.Pod) (running, held map[string]int32) {
	groups := make(map[string]bool, len(rc.Spec.WorkerGroupSpecs))
	for i := range rc.Spec.WorkerGroupSpecs {
		groups[rc.Spec.WorkerGroupSpecs[i].GroupName] = true
	}
	running, held = map[string]int32{}, map[string]int32{}
	for i := range pods {
		p := &pods[i]
		group := p.Labels[labels.Group]
		if !groups[group] || p.Labels[labels.NodeType] != string(rayv1.WorkerNode) ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		held[group]++
		if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning && podReady(p) {
			running[group]++
		}
	}
	return running, held
}

// serveRunning counts, for each deployment of each application in details, its replicas in
// state RUNNING, keyed "<application>/<deployment>"; deployments with none are left out.
func serveRunning(details *dashboard.ServeDetails) map[string]int32 {
	out := map[string]int32{}
	for appName, app := range details.Applications {
		for depName, dep := range app.Deployments {
			var n int32
			for _, r := range dep.Replicas {
				if r.State == dashboard.ReplicaStateRunning {
					n++
				}
			}
			if n > 0 {
				out[runningreplicas.ServeKey(appName, depName)] = n
			}
		}
	}
	return out
}

// workerPods lists rc's worker Pods from the cache.
func (r *Reconciler) workerPods(ctx context.Context, rc *rayv1.RayCluster) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(rc.Namespace), client.MatchingLabels{
		labels.Cluster:  rc.Name,
		labels.NodeType: string(rayv1.WorkerNode),
	}); err != nil {
		return nil, fmt.Errorf("list worker Pods of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	return pods.Items, nil
}
