package raycluster

import (
	"context"
	"errors"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/expectations"
	"github.com/rayfleet/rayfleet/spoke/raycluster/status"
)

// reconcilePods is the last link of the chain: suspend, Recreate upgrade, head, then workers.
func (r *Reconciler) reconcilePods(ctx context.Context, s *scope) error {
	rc := s.cluster
	// Expectations are checked before the Pods are listed: a Pod that reaches the cache in
	// between is then in the list too, never counted as expected-but-missing.
	if err := r.checkExpectations(ctx, s); err != nil {
		return err
	}
	if err := r.listPods(ctx, s); err != nil {
		return err
	}
	switch status.SuspendState(&rc.Status) {
	case rayv1.RayClusterSuspending:
		// Suspension is atomic: every Pod goes before Suspended is reported.
		return r.deleteAllPods(ctx, s, "suspension")
	case rayv1.RayClusterSuspended:
		return nil
	}
	if rayspec.Suspended(&rc.Spec) {
		// The status phase turns Suspending on first; Pods are deleted on the next pass.
		return nil
	}
	hash, err := builder.RecreateHash(&rc.Spec)
	if err != nil {
		return fmt.Errorf("hash spec for Recreate upgrades: %w", err)
	}
	recreate, err := r.needsRecreate(ctx, s, hash)
	if err != nil {
		return err
	}
	if recreate {
		return r.deleteAllPods(ctx, s, "a spec change with upgradeStrategy Recreate")
	}
	if err := r.checkPodSecurity(ctx, s); err != nil {
		return err
	}
	if err := r.reconcileHead(ctx, s); err != nil {
		return err
	}
	for i := range rc.Spec.WorkerGroupSpecs {
		if err := r.reconcileWorkerGroup(ctx, s, &rc.Spec.WorkerGroupSpecs[i]); err != nil {
			return err
		}
	}
	return nil
}

// deleteAllPods removes every Pod of the cluster with one delete-collection call.
func (r *Reconciler) deleteAllPods(ctx context.Context, s *scope, why string) error {
	rc := s.cluster
	if len(activePods(s.pods)) == 0 {
		return nil
	}
	err := r.client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(rc.Namespace),
		client.MatchingLabels{labels.Cluster: rc.Name})
	if err != nil {
		r.eventf(rc, nil, corev1.EventTypeWarning, reasonFailedToDeletePods,
			"Failed deleting Pods of RayCluster %s/%s for %s: %v", rc.Namespace, rc.Name, why, err)
		return status.ReplicaFailure(status.FailedDeleteAllPods, fmt.Errorf("delete all Pods for %s: %w", why, err))
	}
	r.expectations.Forget(rc.Namespace, rc.Name)
	r.eventf(rc, nil, corev1.EventTypeNormal, reasonDeletedPod,
		"Deleted Pods of RayCluster %s/%s for %s", rc.Namespace, rc.Name, why)
	return nil
}

// deletePodsOfType deletes the cluster's head or worker Pods and returns how many still exist.
func (r *Reconciler) deletePodsOfType(ctx context.Context, rc *rayv1.RayCluster, nodeType rayv1.RayNodeType) (int, error) {
	sel := client.MatchingLabels{labels.Cluster: rc.Name, labels.NodeType: string(nodeType)}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(rc.Namespace), sel); err != nil {
		return 0, fmt.Errorf("list %s Pods of RayCluster %s/%s: %w", nodeType, rc.Namespace, rc.Name, err)
	}
	if len(activePods(pods.Items)) > 0 {
		if err := r.client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(rc.Namespace), sel); err != nil {
			return 0, fmt.Errorf("delete %s Pods of RayCluster %s/%s: %w", nodeType, rc.Namespace, rc.Name, err)
		}
	}
	return len(pods.Items), nil
}

// needsRecreate compares the head Pod's recorded spec hash with the spec's. A head built by
// another operator version only gets its annotations refreshed: an operator upgrade alone must
// not restart every cluster.
func (r *Reconciler) needsRecreate(ctx context.Context, s *scope, hash string) (bool, error) {
	us := s.cluster.Spec.UpgradeStrategy
	if us == nil || us.Type == nil || *us.Type != rayv1.RayClusterRecreate {
		return false, nil
	}
	heads := podsOf(s.pods, rayv1.HeadNode, "")
	if len(heads) == 0 {
		return false, nil
	}
	head := &heads[0]
	if v := head.Annotations[labels.KubeRayVersion]; v != "" && v != r.build.KubeRayVersion {
		patch := client.MergeFrom(head.DeepCopy())
		head.Annotations[labels.UpgradeStrategyRecreateHash] = hash
		head.Annotations[labels.KubeRayVersion] = r.build.KubeRayVersion
		if err := r.client.Patch(ctx, head, patch, client.FieldOwner(fieldManager)); err != nil {
			return false, fmt.Errorf("refresh annotations of head Pod %s: %w", head.Name, err)
		}
		return false, nil
	}
	recorded := head.Annotations[labels.UpgradeStrategyRecreateHash]
	return recorded != "" && recorded != hash, nil
}

func (r *Reconciler) reconcileHead(ctx context.Context, s *scope) error {
	rc := s.cluster
	if !s.settled[expectations.HeadGroup] {
		return nil
	}
	heads := podsOf(s.pods, rayv1.HeadNode, "")
	switch {
	case len(heads) == 1:
		return r.replaceBrokenHead(ctx, rc, &heads[0])
	case len(heads) > 1:
		names := make([]string, len(heads))
		for i := range heads {
			names[i] = heads[i].Name
		}
		return fmt.Errorf("%d head Pods %v found for one RayCluster; delete the extra head Pods", len(heads), names)
	}
	if meta.IsStatusConditionTrue(rc.Status.Conditions, string(rayv1.RayClusterProvisioned)) &&
		rc.Annotations[labels.DisableProvisionedHeadRestart] == labels.True {
		ctrl.LoggerFrom(ctx).Info("Head Pod missing; not recreated because of " + labels.DisableProvisionedHeadRestart)
		return nil
	}
	return r.createHead(ctx, s)
}

func (r *Reconciler) replaceBrokenHead(ctx context.Context, rc *rayv1.RayCluster, head *corev1.Pod) error {
	del, why := shouldDeletePod(head, rayv1.HeadNode)
	if !del {
		return nil
	}
	if err := r.client.Delete(ctx, head); err != nil && !apierrors.IsNotFound(err) {
		r.eventf(rc, head, corev1.EventTypeWarning, reasonFailedToDeleteHeadPod,
			"Failed deleting head Pod %s/%s: %v", head.Namespace, head.Name, err)
		return status.ReplicaFailure(status.FailedDeleteHeadPod, fmt.Errorf("delete head Pod %s: %w", head.Name, err))
	}
	r.expectations.Expect(rc.Namespace, rc.Name, expectations.HeadGroup, head.Name, expectations.Delete)
	r.eventf(rc, head, corev1.EventTypeNormal, reasonDeletedHeadPod, "Deleted head Pod %s/%s: %s",
		head.Namespace, head.Name, why)
	// The replacement is created once the deletion is observed.
	return errors.New(why)
}

func (r *Reconciler) createHead(ctx context.Context, s *scope) error {
	rc := s.cluster
	pod, err := builder.HeadPod(rc, r.build)
	if err != nil {
		return status.ReplicaFailure(status.FailedCreateHeadPod, fmt.Errorf("build head Pod: %w", err))
	}
	if f, ok := forbidden(admitPod(s, pod, "head Pod")); ok {
		r.eventf(rc, nil, corev1.EventTypeWarning, reasonForbiddenByPodSecurity,
			"Not creating the head Pod of RayCluster %s/%s: it %s", rc.Namespace, rc.Name, f.violation)
		return status.ReplicaFailure(status.FailedCreateHeadPod, f)
	}
	if err := r.client.Create(ctx, pod, client.FieldOwner(fieldManager)); err != nil {
		r.eventf(rc, pod, corev1.EventTypeWarning, reasonFailedToCreateHeadPod,
			"Failed to create head Pod %s/%s: %v", rc.Namespace, podName(pod), err)
		return status.ReplicaFailure(status.FailedCreateHeadPod, fmt.Errorf("create head Pod: %w", err))
	}
	r.expectations.Expect(rc.Namespace, rc.Name, expectations.HeadGroup, pod.Name, expectations.Create)
	r.eventf(rc, pod, corev1.EventTypeNormal, reasonCreatedHeadPod, "Created head Pod %s/%s", pod.Namespace, pod.Name)
	return nil
}

// podName names a Pod that may only have a generateName yet.
func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName + "<generated>"
}
