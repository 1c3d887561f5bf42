package sweep

import (
	"fmt"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// Verdict is what the sweep decides about one member RayService.
type Verdict struct {
	// Orphan is set when the copy is this hub's and nothing on the hub accounts for it any
	// more: it is to be deleted.
	Orphan bool
	// Reason says why, in words, for logs and events.
	Reason string
}

// Judged is what Judge decides from: one member's RayService and what the hub holds for it.
type Judged struct {
	// HubName is this hub's name (the origin-hub label of its copies).
	HubName string
	// Cluster is the member the copy is on.
	Cluster string
	// Copy is the member RayService.
	Copy *rayv1.RayService
	// Hub is the hub RayService the copy's origin labels name, nil when it does not exist.
	Hub *rayv1.RayService
	// Binding is that RayService's RayServiceBinding, nil when it does not exist.
	Binding *fleetv1alpha1.RayServiceBinding
}

// Origin is the hub RayService a copy's origin labels name; false without them.
func Origin(c *rayv1.RayService) (types.NamespacedName, bool) {
	key := types.NamespacedName{Namespace: c.Labels[labels.OriginNamespace], Name: c.Labels[labels.OriginName]}
	return key, key.Namespace != "" && key.Name != ""
}

// Judge decides whether a member RayService is an orphan of this hub. Only a copy labelled
// with this hub's name and an origin is ever one (another hub's copy, or a copy from before
// hubs named themselves, is left alone), and only when:
//   - its origin hub RayService does not exist; or
//   - the hub RayService has a binding, and the binding lists the cluster neither in
//     spec.clusters (placed) nor in status.clusters (still holding, leaving included). A hub
//     RayService of the same name but another UID whose binding lists the cluster is the
//     fleet reconciler's to take over, not an orphan.
//
// A hub RayService without a binding is never an orphan case: the fleet reconciler writes the
// binding before it applies the first copy, so the binding is about to appear (or the
// RayService is being deleted, which deletes the copies itself). A copy being deleted is not
// one either: it is going already.
func Judge(j Judged) Verdict {
	c := j.Copy
	switch h, ok := c.Labels[labels.OriginHub]; {
	case !ok:
		return Verdict{Reason: "no origin-hub label: made before hubs named themselves, left alone"}
	case h != j.HubName:
		return Verdict{Reason: fmt.Sprintf("a copy of hub %q, not of this hub %q", h, j.HubName)}
	}
	origin, ok := Origin(c)
	if !ok {
		return Verdict{Reason: "no origin namespace and name"}
	}
	if !c.DeletionTimestamp.IsZero() {
		return Verdict{Reason: "being deleted already"}
	}
	if j.Hub == nil {
		return Verdict{Orphan: true, Reason: fmt.Sprintf("its hub RayService %s no longer exists", origin)}
	}
	if j.Binding == nil {
		return Verdict{Reason: fmt.Sprintf("hub RayService %s has no binding yet", origin)}
	}
	if lists(j.Binding, j.Cluster) {
		return Verdict{Reason: fmt.Sprintf("the binding of %s lists cluster %s", origin, j.Cluster)}
	}
	if uid := c.Labels[labels.OriginUID]; uid != string(j.Hub.UID) {
		return Verdict{Orphan: true, Reason: fmt.Sprintf(
			"its hub RayService %s (uid %s) was replaced by another (uid %s) whose binding does not list cluster %s",
			origin, uid, j.Hub.UID, j.Cluster)}
	}
	return Verdict{Orphan: true, Reason: fmt.Sprintf("the binding of %s no longer lists cluster %s", origin, j.Cluster)}
}

// lists reports whether b names cluster as placed or as still holding a copy.
func lists(b *fleetv1alpha1.RayServiceBinding, cluster string) bool {
	if slices.Contains(b.Spec.Clusters, cluster) {
		return true
	}
	return slices.ContainsFunc(b.Status.Clusters, func(c fleetv1alpha1.ClusterStatus) bool { return c.Name == cluster })
}
