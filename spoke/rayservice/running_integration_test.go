package rayservice

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/shared/runningreplicas"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// hubMade returns rs as the hub places it on a member: with the origin labels.
func hubMade(rs *rayv1.RayService) *rayv1.RayService {
	if rs.Labels == nil {
		rs.Labels = map[string]string{}
	}
	rs.Labels[labels.OriginNamespace] = rs.Namespace
	rs.Labels[labels.OriginName] = rs.Name
	rs.Labels[labels.OriginUID] = "0b5a3c1e-hub-uid"
	return rs
}

// running returns the running annotations of the RayService ns/name, "" when absent.
func (h *harness) running(g Gomega, ns, name string) (cluster, serveConfig string) {
	a := h.rayService(g, ns, name).Annotations
	return a[labels.RunningClusterHash], a[labels.RunningServeConfigHash]
}

// expectRunning waits until the running annotations of ns/name describe spec and serveConfig.
func (h *harness) expectRunning(g Gomega, ns, name string, spec *rayv1.RayClusterSpec, serveConfig string) {
	want, err := rayspec.ClusterSpecHash(spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		cluster, serveHash := h.running(g, ns, name)
		g.Expect(cluster).To(Equal(want))
		g.Expect(serveHash).To(Equal(rayspec.ServeConfigHash(serveConfig)))
	}, timeout, interval).Should(Succeed())
}

func TestRunningAnnotations(t *testing.T) {
	h := startHarness(t)

	t.Run("a hub copy gets both once Ready, a Serve config change moves only the serve hash once applied, steady state writes nothing", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "running-hub-copy")
		rs := hubMade(raybuilder.MakeRayService("svc", ns).Obj())
		rc := h.deploy(g, ns, rs)
		h.expectRunning(g, ns, "svc", &rs.Spec.RayClusterSpec, rs.Spec.ServeConfigV2)
		clusterHash, oldServeHash := h.running(g, ns, "svc")

		// Settled: no write at all, the running annotations' included.
		writes, patches := h.writes.Load(), h.rsPatches.Load()
		g.Consistently(func(g Gomega) {
			h.syncEndpoints(g, ns, "svc-serve-svc")
			g.Expect(h.writes.Load()).To(Equal(writes))
		}, settle, interval).Should(Succeed())

		// The dashboard refuses everything: the new config is in the spec but not applied, and
		// the annotations keep saying what runs.
		h.dash.Cluster(ns, rc).SetFault(raydashboard.Fault{HTTPStatus: 500})
		h.update(g, ns, "svc", func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = newServeConfig })
		g.Eventually(func(g Gomega) {
			got := h.rayService(g, ns, "svc")
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			cluster, serveHash := h.running(g, ns, "svc")
			g.Expect(cluster).To(Equal(clusterHash))
			g.Expect(serveHash).To(Equal(oldServeHash))
		}, 3*time.Second, interval).Should(Succeed())
		g.Expect(h.dash.Cluster(ns, rc).Submissions()).To(Equal(1))

		h.dash.Cluster(ns, rc).SetFault(raydashboard.Fault{})
		g.Eventually(func(g Gomega) { g.Expect(h.dash.Cluster(ns, rc).Submissions()).To(Equal(2)) }, timeout, interval).Should(Succeed())
		h.expectRunning(g, ns, "svc", &rs.Spec.RayClusterSpec, newServeConfig)
		cluster, _ := h.running(g, ns, "svc")
		g.Expect(cluster).To(Equal(clusterHash), "the cluster did not change")

		// Two changes, two writes of the RayService itself: the serve hash once the config is
		// applied, the running replicas once the added application's replica runs. Then nothing.
		h.expectReplicas(g, ns, "svc", runningreplicas.Replicas{Serve: map[string]int32{"fruit/MangoStand": 1, "veggie/app": 1}})
		g.Consistently(func(g Gomega) {
			g.Expect(h.rsPatches.Load()).To(Equal(patches + 2))
		}, settle, interval).Should(Succeed())
	})

	t.Run("during a NewCluster upgrade they describe the active cluster until the pending one is promoted", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "running-upgrade")
		rs := hubMade(raybuilder.MakeRayService("svc", ns).Obj())
		h.deploy(g, ns, rs)
		h.expectRunning(g, ns, "svc", &rs.Spec.RayClusterSpec, rs.Spec.ServeConfigV2)
		oldCluster, serveHash := h.running(g, ns, "svc")

		h.update(g, ns, "svc", func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, "rayproject/ray:2.53.0") })
		next := h.waitForPending(g, ns, "svc")
		g.Eventually(func(g Gomega) {
			g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.UpgradeInProgress).Status).To(Equal(metav1.ConditionTrue))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			cluster, serveConfig := h.running(g, ns, "svc")
			g.Expect(cluster).To(Equal(oldCluster), "cluster hash before the promotion")
			g.Expect(serveConfig).To(Equal(serveHash))
		}, 3*time.Second, interval).Should(Succeed())

		h.bringUp(g, ns, next)
		h.waitReady(g, ns, "svc", next)
		upgraded := h.rayService(g, ns, "svc")
		h.expectRunning(g, ns, "svc", &upgraded.Spec.RayClusterSpec, upgraded.Spec.ServeConfigV2)
		newCluster, newServeHash := h.running(g, ns, "svc")
		g.Expect(newCluster).NotTo(Equal(oldCluster))
		g.Expect(newServeHash).To(Equal(serveHash), "same Serve config, now on the new cluster")
	})

	t.Run("a RayService without the origin labels gets none", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "running-not-hub")
		h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Obj())
		g.Consistently(func(g Gomega) {
			a := h.rayService(g, ns, "svc").Annotations
			g.Expect(a).NotTo(HaveKey(labels.RunningClusterHash))
			g.Expect(a).NotTo(HaveKey(labels.RunningServeConfigHash))
		}, settle, interval).Should(Succeed())
	})
}
