package raycluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/demand"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/expectations"
	"github.com/rayfleet/rayfleet/spoke/raycluster/status"
)

// reconcileWorkerGroup brings one worker group to its desired size.
func (r *Reconciler) reconcileWorkerGroup(ctx context.Context, s *scope, g *rayv1.WorkerGroupSpec) error {
	rc := s.cluster
	if !s.settled[g.GroupName] {
		return nil
	}
	pods := activePods(podsOf(s.pods, rayv1.WorkerNode, g.GroupName))
	if g.Suspend != nil && *g.Suspend {
		return r.deletePods(ctx, rc, g.GroupName, pods, "its worker group is suspended")
	}
	if g.NumOfHosts > 1 {
		return r.reconcileMultiHostGroup(ctx, s, g, pods)
	}

	var broken []corev1.Pod
	for i := range pods {
		if del, _ := shouldDeletePod(&pods[i], rayv1.WorkerNode); del {
			broken = append(broken, pods[i])
		}
	}
	if len(broken) > 0 {
		if err := r.deletePods(ctx, rc, g.GroupName, broken, "it is unhealthy"); err != nil {
			return err
		}
		// Replacements are created once the deletions are observed.
		return fmt.Errorf("deleted %d unhealthy worker Pods of group %s", len(broken), g.GroupName)
	}

	pods, err := r.deleteRequestedWorkers(ctx, s, g, pods)
	if err != nil {
		return err
	}
	diff := int(demand.WorkerGroupReplicas(g)) - len(pods)
	switch {
	case diff > 0:
		return r.createWorkers(ctx, s, g, freeIndices(pods, diff))
	case diff < 0 && scaleDownAllowed(rc, r.opts.RandomPodDelete):
		return r.deletePods(ctx, rc, g.GroupName, pickForScaleDown(pods, -diff), "the group is scaled down")
	case diff < 0:
		ctrl.LoggerFrom(ctx).V(1).Info("Worker group above its size; the autoscaler decides what to delete", "group", g.GroupName)
	}
	return nil
}

// deleteRequestedWorkers deletes the Pods named in scaleStrategy.workersToDelete, clears the
// list and returns the Pods that remain.
func (r *Reconciler) deleteRequestedWorkers(ctx context.Context, s *scope, g *rayv1.WorkerGroupSpec, pods []corev1.Pod) ([]corev1.Pod, error) {
	if len(g.ScaleStrategy.WorkersToDelete) == 0 {
		return pods, nil
	}
	requested := map[string]bool{}
	for _, name := range g.ScaleStrategy.WorkersToDelete {
		requested[name] = true
	}
	var doomed, kept []corev1.Pod
	for i := range pods {
		if requested[pods[i].Name] {
			doomed = append(doomed, pods[i])
		} else {
			kept = append(kept, pods[i])
		}
	}
	if err := r.deletePods(ctx, s.cluster, g.GroupName, doomed, "it is listed in scaleStrategy.workersToDelete"); err != nil {
		return nil, err
	}
	if err := r.clearWorkersToDelete(ctx, s.cluster, g); err != nil {
		return nil, err
	}
	return kept, nil
}

// clearWorkersToDelete empties the group's workersToDelete with a JSON patch guarded by test
// operations, so a list the autoscaler rewrote meanwhile is not lost and no other field of the
// spec is touched.
func (r *Reconciler) clearWorkersToDelete(ctx context.Context, rc *rayv1.RayCluster, g *rayv1.WorkerGroupSpec) error {
	idx := -1
	for i := range rc.Spec.WorkerGroupSpecs {
		if rc.Spec.WorkerGroupSpecs[i].GroupName == g.GroupName {
			idx = i
		}
	}
	path := fmt.Sprintf("/spec/workerGroupSpecs/%d", idx)
	ops := []map[string]any{
		{"op": "test", "path": path + "/groupName", "value": g.GroupName},
		{"op": "test", "path": path + "/scaleStrategy/workersToDelete", "value": g.ScaleStrategy.WorkersToDelete},
		{"op": "replace", "path": path + "/scaleStrategy/workersToDelete", "value": []string{}},
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode workersToDelete patch: %w", err)
	}
	err = r.client.Patch(ctx, rc, client.RawPatch(types.JSONPatchType, body), client.FieldOwner(fieldManager))
	if err != nil && !apierrors.IsInvalid(err) {
		return fmt.Errorf("clear workersToDelete of group %s: %w", g.GroupName, err)
	}
	// Invalid means a test failed: the list changed meanwhile and is handled next reconcile.
	g.ScaleStrategy.WorkersToDelete = nil
	return nil
}

// createWorkers creates one single-host worker per replica index.
func (r *Reconciler) createWorkers(ctx context.Context, s *scope, g *rayv1.WorkerGroupSpec, indices []int) error {
	replicas := make([]builder.Replica, len(indices))
	for i, idx := range indices {
		replicas[i] = builder.Replica{Index: idx}
	}
	return r.createInBatches(ctx, s, g, replicas)
}

// Batches of Pod creations: a group's Pods are created concurrently, each batch twice the
// last, so a large group costs a few round trips instead of one per Pod, while a group that
// cannot be created (a quota, an admission webhook) fails after a small batch, as a ReplicaSet
// does.
const (
	firstCreateBatch = 4
	maxCreateBatch   = 64
)

// createInBatches creates the group's Pods for replicas and stops at the first batch with an
// error; Pods not attempted are created by a later reconcile. Each batch leaves one event
// naming its Pods: concurrent events about one object would collide in the events API, and one
// event per batch says the same with fewer writes. The batch's first Pod is the event's related
// object, so the events of two batches (same reason, same RayCluster) are not merged into one.
func (r *Reconciler) createInBatches(ctx context.Context, s *scope, g *rayv1.WorkerGroupSpec, replicas []builder.Replica) error {
	rc := s.cluster
	for batch := firstCreateBatch; len(replicas) > 0; batch = min(2*batch, maxCreateBatch) {
		n := min(batch, len(replicas))
		pods := make([]*corev1.Pod, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { pods[i], errs[i] = r.createWorker(ctx, s, g, replicas[i]) })
		}
		wg.Wait()
		if created := slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return p == nil }); len(created) > 0 {
			names := make([]string, len(created))
			for i, p := range created {
				names[i] = p.Name
			}
			r.eventf(rc, created[0], corev1.EventTypeNormal, reasonCreatedWorkerPod, "Created worker %s %s/%s",
				plural(len(created), "Pod", "Pods"), rc.Namespace, strings.Join(names, ", "))
		}
		if err := errors.Join(errs...); err != nil {
			if f, ok := forbidden(err); ok {
				r.eventf(rc, nil, corev1.EventTypeWarning, reasonForbiddenByPodSecurity,
					"Not creating worker Pods of group %s for RayCluster %s/%s: they %s", g.GroupName, rc.Namespace, rc.Name, f.violation)
				return status.ReplicaFailure(status.FailedCreateWorkerPod, err)
			}
			r.eventf(rc, nil, corev1.EventTypeWarning, reasonFailedToCreateWorkerPod,
				"Failed to create worker Pods of group %s for RayCluster %s/%s: %v", g.GroupName, rc.Namespace, rc.Name, err)
			return status.ReplicaFailure(status.FailedCreateWorkerPod, err)
		}
		replicas = replicas[n:]
	}
	return nil
}

// createWorker creates one worker Pod and returns it as created (named), nil on error.
func (r *Reconciler) createWorker(ctx context.Context, s *scope, g *rayv1.WorkerGroupSpec, replica builder.Replica) (*corev1.Pod, error) {
	rc := s.cluster
	pod, err := builder.WorkerPod(rc, g, replica, r.build)
	if err != nil {
		return nil, fmt.Errorf("build worker Pod of group %s: %w", g.GroupName, err)
	}
	if err := admitPod(s, pod, "worker Pod of group "+g.GroupName); err != nil {
		return nil, err
	}
	if err := r.client.Create(ctx, pod, client.FieldOwner(fieldManager)); err != nil {
		return nil, fmt.Errorf("create worker Pod of group %s: %w", g.GroupName, err)
	}
	r.expectations.Expect(rc.Namespace, rc.Name, g.GroupName, pod.Name, expectations.Create)
	return pod, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// deletePods deletes worker Pods of one group, recording an expectation and an event for each.
func (r *Reconciler) deletePods(ctx context.Context, rc *rayv1.RayCluster, group string, pods []corev1.Pod, why string) error {
	for i := range pods {
		pod := &pods[i]
		if err := r.client.Delete(ctx, pod); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			r.eventf(rc, pod, corev1.EventTypeWarning, reasonFailedToDeleteWorkerPod,
				"Failed deleting worker Pod %s/%s: %v", pod.Namespace, pod.Name, err)
			return status.ReplicaFailure(status.FailedDeleteWorkerPod, fmt.Errorf("delete worker Pod %s: %w", pod.Name, err))
		}
		r.expectations.Expect(rc.Namespace, rc.Name, group, pod.Name, expectations.Delete)
		r.eventf(rc, pod, corev1.EventTypeNormal, reasonDeletedWorkerPod, "Deleted worker Pod %s/%s because %s",
			pod.Namespace, pod.Name, why)
	}
	return nil
}
