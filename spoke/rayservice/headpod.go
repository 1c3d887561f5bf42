package rayservice

import (
	"context"
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// reconcileHeadPodLabels sets ray.io/serve on the head Pod of the active and the pending
// cluster: the serve Service selects Pods with ray.io/serve=true, and the head Pod, unlike a
// worker, has no readiness probe on its Serve proxy.
func (r *Reconciler) reconcileHeadPodLabels(ctx context.Context, s *scope) error {
	for _, rc := range []*rayv1.RayCluster{s.active, s.pending} {
		if rc == nil {
			continue
		}
		if err := r.reconcileHeadPodLabel(ctx, s, rc); err != nil {
			return err
		}
	}
	return nil
}

// reconcileHeadPodLabel sets rc's head Pod's ray.io/serve to whether its Serve proxy answers
// its health check, or to "false" with excludeHeadPodFromServeSvc; it writes only on change.
//
// The Pods in the spoke's cache are trimmed (spec reduced to container names, see
// raycluster.TrimPod), so the Pod is never written back whole, as KubeRay's Update does: the
// label alone is merge-patched, and the serve port is read from the cluster's head template.
// A cluster without a head Pod yet has nothing to label; KubeRay fails the reconcile then,
// which holds back the status of a cluster still starting.
func (r *Reconciler) reconcileHeadPodLabel(ctx context.Context, s *scope, rc *rayv1.RayCluster) error {
	head, err := r.headPod(ctx, rc)
	if err != nil || head == nil {
		return err
	}
	want := labels.False
	if !s.rs.Spec.ExcludeHeadPodFromServeSvc && head.Status.PodIP != "" {
		url := r.resolver.ProxyURL(rc, head, builder.ServePort(rc))
		if healthErr := r.factory.CheckProxyHealth(ctx, url); healthErr == nil {
			want = labels.True
		} else {
			ctrl.LoggerFrom(ctx).V(1).Info("Serve proxy of the head Pod is not healthy", "pod", head.Name, "error", healthErr.Error())
		}
	}
	memoKey := "label/" + string(head.UID)
	if head.Labels[labels.Serve] == want || r.writes.Recent(memoKey, want) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{labels.Serve: want}}})
	if err != nil {
		return fmt.Errorf("build the label patch of Pod %s/%s: %w", head.Namespace, head.Name, err)
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: head.Namespace, Name: head.Name}}
	err = r.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(fieldManager))
	if apierrors.IsNotFound(err) {
		return nil // the Pod went away; its successor is labelled on the next pass
	}
	if err != nil {
		r.eventf(s.rs, head, corev1.EventTypeWarning, reasonFailedToUpdateHeadPodLabel,
			"Failed to update the serve label to %q for the Head Pod %s/%s: %v", want, head.Namespace, head.Name, err)
		return fmt.Errorf("label head Pod %s/%s %s=%s: %w", head.Namespace, head.Name, labels.Serve, want, err)
	}
	r.writes.Note(memoKey, want)
	r.eventf(s.rs, head, corev1.EventTypeNormal, reasonUpdatedHeadPodLabel,
		"Updated the serve label to %q for the Head Pod %s/%s", want, head.Namespace, head.Name)
	return nil
}

// headPod returns rc's head Pod from the cache: the one not being deleted, nil when there is
// none (or, while a head is replaced, more than one).
func (r *Reconciler) headPod(ctx context.Context, rc *rayv1.RayCluster) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(rc.Namespace), client.MatchingLabels{
		labels.Cluster:  rc.Name,
		labels.NodeType: string(rayv1.HeadNode),
	}); err != nil {
		return nil, fmt.Errorf("list head Pods of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	var head *corev1.Pod
	for i := range pods.Items {
		if !pods.Items[i].DeletionTimestamp.IsZero() {
			continue
		}
		if head != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("RayCluster has several head Pods; not labelling", "rayCluster", rc.Name)
			return nil, nil
		}
		head = &pods.Items[i]
	}
	return head, nil
}
