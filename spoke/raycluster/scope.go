package raycluster

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/spoke/expectations"
	"github.com/rayfleet/rayfleet/spoke/podsecurity"
)

// scope is what one reconcile of one RayCluster read and decided, shared by its phases.
type scope struct {
	// cluster is the defaulted RayCluster the phases work on.
	cluster *rayv1.RayCluster
	// original is the cluster as read, the base of the status patch.
	original *rayv1.RayCluster
	// headService is the head Service found or created by this reconcile (nil if neither).
	headService *corev1.Service
	// pods is the cluster's Pods as last listed from the cache.
	pods []corev1.Pod
	// settled holds, per group (expectations.HeadGroup for the head), whether every Pod change
	// asked for earlier has been observed; only settled groups are scaled.
	settled map[string]bool
	// podSecurity checks every Pod before it is created; nil when the cluster's Pods are not
	// checked (not hub-placed, or the member's level is privileged).
	podSecurity *podsecurity.Checker
	// podsForbidden names the templates whose Pods violate the level; nil when this reconcile
	// did not check them (it stopped earlier), so the status keeps what it said.
	podsForbidden []string
	// conflicts name the objects left alone because something else controls them.
	conflicts []string
	// foreignRole says the autoscaler's Role is not the RayCluster's, so nothing is bound to it.
	foreignRole bool
}

// observedConflicts are the conflicts the status reports: all of them after a full chain; after
// one that stopped early, those found (a conflict is a conflict), or nil when none was, since
// the objects not looked at may still conflict.
func (s *scope) observedConflicts(reconcileErr error) []string {
	if reconcileErr == nil && s.conflicts == nil {
		return []string{}
	}
	return s.conflicts
}

// checkExpectations fills s.settled for the head and every worker group.
func (r *Reconciler) checkExpectations(ctx context.Context, s *scope) error {
	rc := s.cluster
	s.settled = make(map[string]bool, len(rc.Spec.WorkerGroupSpecs)+1)
	groups := []string{expectations.HeadGroup}
	for i := range rc.Spec.WorkerGroupSpecs {
		groups = append(groups, rc.Spec.WorkerGroupSpecs[i].GroupName)
	}
	for _, g := range groups {
		ok, err := r.expectations.Satisfied(ctx, r.client, r.apiReader, rc.Namespace, rc.Name, g)
		if err != nil {
			return fmt.Errorf("check Pod expectations of group %q: %w", g, err)
		}
		s.settled[g] = ok
	}
	return nil
}

func newScope(rc *rayv1.RayCluster) *scope {
	return &scope{cluster: rc, original: rc.DeepCopy()}
}

// listPods refreshes s.pods from the cache through the cluster index.
func (r *Reconciler) listPods(ctx context.Context, s *scope) error {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(s.cluster.Namespace),
		client.MatchingFields{podClusterIndex: s.cluster.Name}); err != nil {
		return fmt.Errorf("list Pods of RayCluster %s/%s: %w", s.cluster.Namespace, s.cluster.Name, err)
	}
	// The GCS FT Redis cleanup Job's Pod carries ray.io/cluster too; it is not a Ray node.
	s.pods = s.pods[:0]
	for i := range pods.Items {
		switch rayv1.RayNodeType(pods.Items[i].Labels[labels.NodeType]) {
		case rayv1.HeadNode, rayv1.WorkerNode:
			s.pods = append(s.pods, pods.Items[i])
		}
	}
	return nil
}

// podsOf returns the listed Pods with the given node type and, for workers, group.
func podsOf(pods []corev1.Pod, nodeType rayv1.RayNodeType, group string) []corev1.Pod {
	var out []corev1.Pod
	for i := range pods {
		l := pods[i].Labels
		if l[labels.NodeType] != string(nodeType) {
			continue
		}
		if nodeType == rayv1.WorkerNode && l[labels.Group] != group {
			continue
		}
		out = append(out, pods[i])
	}
	return out
}
