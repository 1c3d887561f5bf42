//go:build e2e

package e2e

import (
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// restartDeletionDelaySeconds leaves room for a spoke restart between the moment the old
// cluster's deletion is scheduled and the moment it is due.
const restartDeletionDelaySeconds = 6

// TestRayServiceSurvivesSpokeRestart stops the spoke in the middle of an upgrade and again
// while the old cluster waits out its deletion delay. Each new spoke starts with empty caches
// (no serve configs, no memory of scheduled deletions) and must finish the upgrade and delete
// the old cluster at the time recorded on it, not earlier and not never.
//
// It restarts the suite's one spoke, so it must not run alongside other tests. It does not
// call t.Parallel(): go test runs every such test to completion before it releases the
// parallel ones (whatever their order in the files), so this one has the spoke and the
// machine to itself. The other choice, a second member control plane with a spoke of its
// own, would cost another kube-apiserver start on a small CI machine; a few seconds of serial
// run time are the cheaper price.
func TestRayServiceSurvivesSpokeRestart(t *testing.T) {
	ns := newNamespace(t)
	key := createRayService(t, makeRayService("restart", ns).DeletionDelay(restartDeletionDelaySeconds).Obj())
	old := expectRayServiceReady(t, key).Status.ActiveServiceStatus.RayClusterName

	updateRayService(t, key, bumpHeadEnv("2"))
	pending := pendingClusterName(t, key, old)
	eventually(t, func(g gomega.Gomega) {
		g.Expect(rayServiceClusters(g, ns, "restart")).To(gomega.ContainElement(pending), "pending cluster created")
	})
	env.restartSpoke(t)

	eventually(t, func(g gomega.Gomega) {
		rs := getRayService(g, key)
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(pending), "promoted")
		g.Expect(serviceSelectedCluster(g, ns, "restart-serve-svc")).To(gomega.Equal(pending))
	})
	expectRayServiceReady(t, key)
	oldKey := types.NamespacedName{Namespace: ns, Name: old}
	eventually(t, func(g gomega.Gomega) {
		g.Expect(getRayCluster(g, oldKey).Annotations).To(gomega.HaveKey(labels.DeleteAfter))
	})
	// The deletion is scheduled. A spoke that kept it in memory only would forget it now and
	// schedule it again, later; so the next spoke must leave the recorded time alone.
	scheduled := getRayCluster(gomega.NewWithT(t), oldKey).Annotations[labels.DeleteAfter]
	env.restartSpoke(t)
	dash := standIn(ns, pending)
	seen := dash.Requests(raydashboard.OpServeDetails)
	eventually(t, func(g gomega.Gomega) {
		// A read of the applications comes after the clean-up in a reconcile: once the new
		// spoke has read them, it has looked at the old cluster's deletion time too.
		g.Expect(dash.Requests(raydashboard.OpServeDetails)).To(gomega.BeNumerically(">", seen))
	})
	gomega.NewWithT(t).Expect(getRayCluster(gomega.NewWithT(t), oldKey).Annotations).To(
		gomega.HaveKeyWithValue(labels.DeleteAfter, scheduled), "the recorded time is kept across restarts")
	expectDeletedNotBefore(t, oldKey)
	eventually(t, func(g gomega.Gomega) {
		g.Expect(rayServiceClusters(g, ns, "restart")).To(gomega.Equal([]string{pending}))
	})
	expectRayServiceReady(t, key)
}
