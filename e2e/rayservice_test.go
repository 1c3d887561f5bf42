//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// consistentlyFor is how long a test watches that nothing more happens: longer than the
// RayService reconciler's 2 s requeue, so that at least one more reconcile falls inside it.
const consistentlyFor = 3 * time.Second

func TestRayServiceBecomesReady(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayService(t, makeRayService("first", ns).Obj())
	rs := expectRayServiceReady(t, key)
	active := rs.Status.ActiveServiceStatus.RayClusterName
	g := gomega.NewWithT(t)
	g.Expect(active).To(gomega.HavePrefix("first-"))
	rcKey := types.NamespacedName{Namespace: ns, Name: active}

	t.Run("endpoints", func(t *testing.T) {
		// The worker carries ray.io/serve=true from creation; the head gets it once its Serve
		// proxy answers, so both end up behind the serve Service.
		eventually(t, func(g gomega.Gomega) {
			g.Expect(getRayService(g, key).Status.NumServeEndpoints).To(gomega.Equal(int32(2)))
			g.Expect(headPod(g, rcKey).Labels).To(gomega.HaveKeyWithValue(labels.Serve, "true"))
		})
	})
	t.Run("ray cluster", func(t *testing.T) {
		g := gomega.NewWithT(t)
		rc := getRayCluster(g, rcKey)
		g.Expect(rc.Labels).To(gomega.And(
			gomega.HaveKeyWithValue(labels.OriginatedFromCRName, "first"),
			gomega.HaveKeyWithValue(labels.OriginatedFromCRD, "RayService"),
		))
		g.Expect(rc.Annotations).To(gomega.And(
			gomega.HaveKey(labels.HashWithoutReplicas),
			gomega.HaveKeyWithValue(labels.NumWorkerGroups, "1"),
			gomega.HaveKeyWithValue(labels.KubeRayVersion, labels.KubeRayVersionValue),
		))
		expectOwnedBy(g, rc.OwnerReferences, rs)
		expectReady(t, rcKey, 1)
	})
	t.Run("services", func(t *testing.T) {
		g := gomega.NewWithT(t)
		head := &corev1.Service{}
		g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "first-head-svc"}, head)).To(gomega.Succeed())
		g.Expect(head.Spec.Selector).To(gomega.HaveKeyWithValue(labels.Cluster, active))
		g.Expect(head.Spec.Selector).To(gomega.HaveKeyWithValue(labels.NodeType, string(rayv1.HeadNode)))
		expectOwnedBy(g, head.OwnerReferences, rs)
		serve := &corev1.Service{}
		g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "first-serve-svc"}, serve)).To(gomega.Succeed())
		g.Expect(serve.Spec.Selector).To(gomega.Equal(map[string]string{labels.Cluster: active, labels.Serve: "true"}))
		g.Expect(serve.Labels).To(gomega.HaveKeyWithValue(labels.Serve, "first-serve"))
		expectOwnedBy(g, serve.OwnerReferences, rs)
	})
	t.Run("dashboard", func(t *testing.T) {
		g := gomega.NewWithT(t)
		dash := standIn(ns, active)
		g.Expect(dash.Submissions()).To(gomega.Equal(1), "one PUT for a new cluster")
		g.Expect(appDeploymentVersion(dash.Config())).To(gomega.Equal("v1"))
		g.Expect(dash.TargetCapacity()).To(gomega.BeNil(), "no target_capacity outside incremental upgrades")
		g.Expect(dash.Requests(raydashboard.OpServeDetails)).To(gomega.BeNumerically(">", 0))
		g.Expect(dash.Requests(raydashboard.OpProxyHealth)).To(gomega.BeNumerically(">", 0))
	})
	t.Run("status", func(t *testing.T) {
		g := gomega.NewWithT(t)
		app := rs.Status.ActiveServiceStatus.Applications[serveApp]
		g.Expect(app.Deployments).To(gomega.HaveKeyWithValue(serveDeployment,
			gomega.HaveField("Status", rayv1.DeploymentStatusEnum.HEALTHY)))
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterStatus.State).To(gomega.Equal(rayv1.Ready))
		g.Expect(rs.Status.ActiveServiceStatus.TrafficRoutedPercent).To(gomega.BeNil())
		g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty())
		g.Expect(rs.Status.PendingServiceStatus.Applications).To(gomega.BeEmpty())
		g.Expect(eventReasons(g, ns, "first")).To(gomega.ContainElements("CreatedRayCluster", "UpdatedServeApplications"))
	})
}

func TestRayServiceServeConfigChangeAppliedInPlace(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayService(t, makeRayService("inplace", ns).Obj())
	active := expectRayServiceReady(t, key).Status.ActiveServiceStatus.RayClusterName
	dash := standIn(ns, active)
	before := dash.Submissions()

	updateRayService(t, key, func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = serveConfig("v2") })
	eventually(t, func(g gomega.Gomega) {
		g.Expect(appDeploymentVersion(dash.Config())).To(gomega.Equal("v2"))
	})
	rs := expectRayServiceReady(t, key)
	g := gomega.NewWithT(t)
	g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(active), "same RayCluster")
	// A new config is submitted once; the cache keeps later reconciles from submitting it again.
	g.Consistently(func(g gomega.Gomega) {
		g.Expect(dash.Submissions()).To(gomega.Equal(before + 1))
		g.Expect(rayServiceClusters(g, ns, "inplace")).To(gomega.Equal([]string{active}))
		g.Expect(getRayService(g, key).Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty())
	}).WithTimeout(consistentlyFor).WithPolling(poll).Should(gomega.Succeed())
}

func TestRayServiceZeroDowntimeUpgrade(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayService(t, makeRayService("upgrade", ns).Obj())
	old := expectRayServiceReady(t, key).Status.ActiveServiceStatus.RayClusterName

	updateRayService(t, key, bumpHeadEnv("2"))
	pending := pendingClusterName(t, key, old)
	eventually(t, func(g gomega.Gomega) {
		rs := getRayService(g, key)
		if rs.Status.PendingServiceStatus.RayClusterName == "" {
			return // promoted already: nothing left to see of this stage
		}
		expectServiceCondition(g, rs, rayv1.UpgradeInProgress, metav1.ConditionTrue, rayv1.BothActivePendingClustersExist)
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(old), "active is frozen during the upgrade")
	})

	var promotedAt time.Time
	eventually(t, func(g gomega.Gomega) {
		rs := getRayService(g, key)
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(pending), "promoted")
		g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty())
		g.Expect(serviceSelectedCluster(g, ns, "upgrade-serve-svc")).To(gomega.Equal(pending), "serve traffic switched")
		g.Expect(serviceSelectedCluster(g, ns, "upgrade-head-svc")).To(gomega.Equal(pending), "head Service switched")
		promotedAt = time.Now()
	})
	expectRayServiceReady(t, key)
	g := gomega.NewWithT(t)
	g.Expect(standIn(ns, pending).Submissions()).To(gomega.Equal(1), "the new cluster got the config once")

	oldKey := types.NamespacedName{Namespace: ns, Name: old}
	deleteAfter := expectDeletedNotBefore(t, oldKey)
	// The delay runs from promotion; allow for RFC 3339's whole seconds and the polling lag.
	delay := time.Duration(testDeletionDelaySeconds) * time.Second
	g.Expect(deleteAfter).To(gomega.BeTemporally("~", promotedAt.Add(delay), 2*time.Second))
	eventually(t, func(g gomega.Gomega) {
		g.Expect(rayServiceClusters(g, ns, "upgrade")).To(gomega.Equal([]string{pending}))
		g.Expect(eventReasons(g, ns, "upgrade")).To(gomega.ContainElements("UpdatedService", "DeletedRayCluster"))
	})
}

// expectOwnedBy asserts that the RayService is the controller of an object.
func expectOwnedBy(g gomega.Gomega, refs []metav1.OwnerReference, rs *rayv1.RayService) {
	g.Expect(refs).To(gomega.ContainElement(gomega.And(
		gomega.HaveField("Kind", "RayService"),
		gomega.HaveField("Name", rs.Name),
		gomega.HaveField("UID", rs.UID),
		gomega.HaveField("Controller", gomega.HaveValue(gomega.BeTrue())),
	)))
}
