package rayservice

import (
	"context"
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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
// The proxy is asked only when decideProxyCheck says so: KubeRay asks it on every reconcile.
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
	memoKey := "label/" + string(head.UID)
	current := head.Labels[labels.Serve]
	switch {
	case r.writes.Recent(memoKey, labels.True):
		current = labels.True
	case r.writes.Recent(memoKey, labels.False):
		current = labels.False
	}
	labelled := current == labels.True
	reportedReady := false
	if labelled {
		// Only a labelled head's readiness matters: an unlabelled one is asked anyway.
		if reportedReady, err = r.headReportedReady(ctx, s, rc, head); err != nil {
			return err
		}
	}
	readDue := rc != s.active || !r.activeReadCanWait(s)
	want := current
	switch decideProxyCheck(s.rs.Spec.ExcludeHeadPodFromServeSvc, head.Status.PodIP != "", labelled, reportedReady, readDue) {
	case labelFalse:
		want = labels.False
	case askProxy:
		want = labels.False
		url := r.resolver.ProxyURL(rc, head, builder.ServePort(rc))
		if healthErr := r.factory.CheckProxyHealth(ctx, url); healthErr == nil {
			want = labels.True
		} else {
			ctrl.LoggerFrom(ctx).V(1).Info("Serve proxy of the head Pod is not healthy", "pod", head.Name, "error", healthErr.Error())
		}
	case keepLabel:
	}
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

// proxyCheck is what the head label phase does about one head Pod.
type proxyCheck int

const (
	// keepLabel: the label stands as it is, and the proxy is not asked.
	keepLabel proxyCheck = iota
	// askProxy: the proxy's health check decides the label.
	askProxy
	// labelFalse: the head does not serve (excludeHeadPodFromServeSvc, or no IP to reach it).
	labelFalse
)

// decideProxyCheck decides whether the head Pod's Serve proxy is asked for its health (GET
// /-/healthz). KubeRay asks on every reconcile, one call every 2 s for each cluster for good;
// here Kubernetes' own view is used instead once the head serves:
//   - a head labelled ray.io/serve=true that Kubernetes reports ready (its Ready condition, and
//     its endpoint in the serve EndpointSlices) keeps its label without a call;
//   - a labelled head that Kubernetes reports not ready is asked at once, and loses its label
//     when its proxy does not answer;
//   - a head not labelled yet (a new cluster, a new head Pod, a proxy that failed) is asked at
//     the pace its Serve applications are read (readDue): every reconcile while the RayService
//     changes, every stable interval once it is settled.
//
// Kubernetes' readiness of a head Pod is the raylet's and the dashboard's (KubeRay puts the
// proxy check in the readiness probe of workers only), so a head proxy that stops answering
// while its Pod stays Ready keeps the label until Kubernetes reports a change; a proxy stops
// when its node is drained or its Ray processes die, which Kubernetes does report.
func decideProxyCheck(excluded, hasIP, labelled, reportedReady, readDue bool) proxyCheck {
	switch {
	case excluded || !hasIP:
		return labelFalse
	case labelled && reportedReady:
		return keepLabel
	case labelled:
		return askProxy
	case readDue:
		return askProxy
	default:
		return keepLabel
	}
}

// headReportedReady reports whether Kubernetes counts head ready: its Ready condition is True
// and no EndpointSlice of the serve Service that would select it lists it as not ready (the
// EndpointSlice controller's view, which the spoke watches).
func (r *Reconciler) headReportedReady(ctx context.Context, s *scope, rc *rayv1.RayCluster, head *corev1.Pod) (bool, error) {
	if !podReady(head) {
		return false, nil
	}
	svc := builder.RayServiceServeServiceName(s.rs)
	if s.incremental {
		svc = builder.ClusterServeServiceName(rc)
	}
	var slices discoveryv1.EndpointSliceList
	if err := r.client.List(ctx, &slices, client.InNamespace(rc.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc}); err != nil {
		return false, fmt.Errorf("list EndpointSlices of Service %s/%s: %w", rc.Namespace, svc, err)
	}
	return endpointReady(slices.Items, head.UID), nil
}

// podReady reports whether pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// endpointReady reports whether no endpoint of the Pod uid in slices is marked not ready. A Pod
// the slices do not list (its Service selects another cluster, or the slices lag) is not
// contradicted; an unset Ready condition means ready, as the EndpointSlice API says.
func endpointReady(slices []discoveryv1.EndpointSlice, uid types.UID) bool {
	for i := range slices {
		for _, ep := range slices[i].Endpoints {
			if ep.TargetRef != nil && ep.TargetRef.UID == uid && !ptr.Deref(ep.Conditions.Ready, true) {
				return false
			}
		}
	}
	return true
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
