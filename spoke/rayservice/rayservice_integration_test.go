package rayservice

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// newServeConfig adds an application to the default Serve config.
const newServeConfig = raybuilder.RayServiceServeConfig + `  - name: veggie
    import_path: veggie.app
    route_prefix: /veggie
`

func TestRayServiceReconciler(t *testing.T) {
	h := startHarness(t)
	ctx := context.Background()

	t.Run("first deploy to Ready, then nothing is written or submitted", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "first-deploy")
		g.Expect(h.c.Create(ctx, raybuilder.MakeRayService("svc", ns).Obj())).To(Succeed())
		rc := h.waitForPending(g, ns, "svc")
		g.Expect(h.rayService(g, ns, "svc").Finalizers).To(ContainElement(labels.RayServiceFinalizer))
		g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady).Reason).To(Equal(string(rayv1.RayServiceInitializing)))

		h.bringUp(g, ns, rc)
		h.waitReady(g, ns, "svc", rc)
		rs := h.rayService(g, ns, "svc")
		g.Expect(rs.Status.ActiveServiceStatus.Applications).To(HaveKeyWithValue("fruit", HaveField("Status", "RUNNING")))
		g.Expect(rs.Status.ObservedGeneration).To(Equal(rs.Generation))
		g.Expect(condition(rs, rayv1.UpgradeInProgress).Reason).To(Equal(string(rayv1.NoPendingCluster)))
		var head corev1.Pod
		g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rc + "-head"}, &head)).To(Succeed())
		g.Expect(head.Labels).To(HaveKeyWithValue(labels.Serve, "true"))
		g.Expect(h.dash.Cluster(ns, rc).Submissions()).To(Equal(1))

		// Settled: reconciles keep reading the dashboard, and write nothing anywhere. (The fake
		// clock stands still, so the submission stays recent and the dashboard is read at the
		// changing pace; TestServePolls moves the clock.)
		writes, gets := h.writes.Load(), h.dash.Cluster(ns, rc).Requests(raydashboard.OpServeDetails)
		g.Consistently(func(g Gomega) {
			h.syncEndpoints(g, ns, "svc-serve-svc")
			g.Expect(h.writes.Load()).To(Equal(writes))
			g.Expect(h.dash.Cluster(ns, rc).Submissions()).To(Equal(1))
		}, settle, interval).Should(Succeed())
		g.Expect(h.dash.Cluster(ns, rc).Requests(raydashboard.OpServeDetails)).To(BeNumerically(">", gets))
	})

	t.Run("the head Pod's serve label follows Kubernetes' readiness and the proxy's health", func(t *testing.T) {
		headLabelFollowsKubernetes(t, h)
	})

	t.Run("serveConfigV2 change is applied in place", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "in-place")
		rc := h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Obj())

		h.update(g, ns, "svc", func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = newServeConfig })
		g.Eventually(func(g Gomega) {
			g.Expect(h.dash.Cluster(ns, rc).Submissions()).To(Equal(2))
			rs := h.rayService(g, ns, "svc")
			g.Expect(rs.Status.ActiveServiceStatus.Applications).To(HaveKey("veggie"))
			g.Expect(rs.Status.ObservedGeneration).To(Equal(rs.Generation))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(h.clusters(g, ns)).To(HaveLen(1))
			g.Expect(h.rayService(g, ns, "svc").Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
			g.Expect(h.dash.Cluster(ns, rc).Submissions()).To(Equal(2))
		}, settle, interval).Should(Succeed())
	})

	t.Run("worker group appended: active cluster updated in place", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "append-group")
		rc := h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Obj())
		h.update(g, ns, "svc", func(rs *rayv1.RayService) {
			raybuilder.AppendGroup(&rs.Spec.RayClusterSpec, "big", 2)
		})
		g.Eventually(func(g Gomega) {
			var got rayv1.RayCluster
			g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rc}, &got)).To(Succeed())
			g.Expect(got.Spec.WorkerGroupSpecs).To(HaveLen(2))
			g.Expect(got.Annotations).To(HaveKeyWithValue(labels.NumWorkerGroups, "2"))
		}, timeout, interval).Should(Succeed())
		g.Expect(h.clusters(g, ns)).To(HaveLen(1))
		g.Eventually(func() []string { return h.events(g, ns, "svc") }, timeout, interval).Should(ContainElement(reasonUpdatedCluster))
	})

	t.Run("NewCluster upgrade: switch, promotion, deletion after the delay, across restarts", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "upgrade")
		old := h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Obj())

		h.update(g, ns, "svc", func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, "rayproject/ray:2.53.0") })
		next := h.waitForPending(g, ns, "svc")
		g.Expect(next).NotTo(Equal(old))
		g.Eventually(func(g Gomega) {
			rs := h.rayService(g, ns, "svc")
			g.Expect(condition(rs, rayv1.UpgradeInProgress).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(condition(rs, rayv1.RayServiceReady).Status).To(Equal(metav1.ConditionTrue)) // the old one serves
		}, timeout, interval).Should(Succeed())

		h.restart(t) // mid-upgrade
		h.bringUp(g, ns, next)
		h.waitReady(g, ns, "svc", next)
		var headSvc corev1.Service
		g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "svc-head-svc"}, &headSvc)).To(Succeed())
		g.Expect(headSvc.Spec.Selector).To(HaveKeyWithValue(labels.Cluster, next))

		// The old cluster is scheduled for deletion a minute (of the fake clock) from now.
		var scheduled string
		g.Eventually(func(g Gomega) {
			var rc rayv1.RayCluster
			g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: old}, &rc)).To(Succeed())
			scheduled = rc.Annotations[labels.DeleteAfter]
			g.Expect(scheduled).NotTo(BeEmpty())
		}, timeout, interval).Should(Succeed())
		at, err := time.Parse(time.RFC3339, scheduled)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(at.Sub(h.clock.Now())).To(BeNumerically("~", time.Minute, 5*time.Second))

		h.restart(t) // a restart during the delay neither deletes early nor forgets
		h.clock.Step(30 * time.Second)
		g.Consistently(func() bool { return h.exists(ns, old, &rayv1.RayCluster{}) }, settle, interval).Should(BeTrue())
		h.clock.Step(31 * time.Second)
		g.Eventually(func() bool { return h.exists(ns, old, &rayv1.RayCluster{}) }, timeout, interval).Should(BeFalse())
		g.Expect(h.exists(ns, next, &rayv1.RayCluster{})).To(BeTrue())
		g.Expect(h.events(g, ns, "svc")).To(ContainElement(reasonDeletedCluster))
	})

	t.Run("initializing timeout is terminal and cleans up", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "timeout")
		rs := raybuilder.MakeRayService("svc", ns).Annotation(labels.InitializingTimeout, "30s").DeletionDelay(10).Obj()
		g.Expect(h.c.Create(ctx, rs)).To(Succeed())
		rc := h.waitForPending(g, ns, "svc")

		h.clock.Step(31 * time.Second)
		g.Eventually(func(g Gomega) {
			rs := h.rayService(g, ns, "svc")
			c := condition(rs, rayv1.RayServiceReady)
			g.Expect(c.Reason).To(Equal(string(rayv1.RayServiceInitializingTimeout)))
			g.Expect(c.Message).To(ContainSubstring("configured timeout of 30s"))
			g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
			g.Expect(h.events(g, ns, "svc")).To(ContainElement(reasonTimedOut))
		}, timeout, interval).Should(Succeed())

		g.Eventually(func(g Gomega) {
			var got rayv1.RayCluster
			g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rc}, &got)).To(Succeed())
			g.Expect(got.Annotations).To(HaveKey(labels.DeleteAfter))
		}, timeout, interval).Should(Succeed())
		h.clock.Step(11 * time.Second)
		g.Eventually(func(g Gomega) { g.Expect(h.clusters(g, ns)).To(BeEmpty()) }, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(h.clusters(g, ns)).To(BeEmpty())
			g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady).Reason).To(Equal(string(rayv1.RayServiceInitializingTimeout)))
		}, settle, interval).Should(Succeed())

		// A new spec starts over.
		h.update(g, ns, "svc", func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, "rayproject/ray:2.53.0") })
		h.waitForPending(g, ns, "svc")
		g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady).Reason).To(Equal(string(rayv1.RayServiceInitializing)))
	})

	t.Run("dashboard failure surfaces as event and message, then recovers", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "dashboard-down")
		g.Expect(h.c.Create(ctx, raybuilder.MakeRayService("svc", ns).Obj())).To(Succeed())
		rc := h.waitForPending(g, ns, "svc")
		h.dash.Cluster(ns, rc).SetFault(raydashboard.Fault{HTTPStatus: 500})
		h.bringUp(g, ns, rc)

		g.Eventually(func(g Gomega) {
			c := condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady)
			g.Expect(c.Reason).To(Equal(string(rayv1.RayServiceInitializing)))
			g.Expect(c.Message).To(ContainSubstring("500"))
			g.Expect(h.events(g, ns, "svc")).To(ContainElement(reasonFailedToGetServeApps))
		}, timeout, interval).Should(Succeed())
		g.Expect(h.eventNote(g, ns, "svc", reasonFailedToGetServeApps)).To(ContainSubstring("500"))

		h.dash.Cluster(ns, rc).SetFault(raydashboard.Fault{})
		h.waitReady(g, ns, "svc", rc)
		g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady).Message).NotTo(ContainSubstring("500"))
	})

	t.Run("Serve submission failure surfaces and is retried", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "submit-fails")
		rc := h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Obj())
		h.dash.Cluster(ns, rc).Reset() // the head restarted without GCS FT: applications gone
		h.dash.Cluster(ns, rc).SetFault(raydashboard.Fault{HTTPStatus: 503})
		g.Eventually(func() []string { return h.events(g, ns, "svc") }, timeout, interval).Should(ContainElement(reasonFailedToGetServeApps))
		h.dash.Cluster(ns, rc).SetFault(raydashboard.Fault{})
		g.Eventually(func(g Gomega) {
			g.Expect(h.dash.Cluster(ns, rc).AppStatuses()).To(HaveKeyWithValue("fruit", "RUNNING"))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("incremental upgrade steps the HTTPRoute weights to 100/0", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "incremental")
		rs := raybuilder.MakeRayService("svc", ns).Incremental(50, 25, 10).Obj()
		old := h.deployIncremental(g, ns, rs)

		h.update(g, ns, "svc", func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, "rayproject/ray:2.53.0") })
		next := h.waitForPending(g, ns, "svc")
		h.bringUp(g, ns, next)
		g.Eventually(func(g Gomega) {
			g.Expect(h.exists(ns, next+"-serve-svc", &corev1.Service{})).To(BeTrue())
			g.Expect(h.routeWeights(g, ns, "svc")).To(HaveKey(next + "-serve-svc"))
			h.acceptGateway(g, ns, "svc")
		}, timeout, interval).Should(Succeed())

		// Play time forward one interval at a time and watch the pending cluster's weight.
		var seen []int32
		g.Eventually(func(g Gomega) {
			h.syncEndpoints(g, ns, old+"-serve-svc")
			h.syncEndpoints(g, ns, next+"-serve-svc")
			w := h.routeWeights(g, ns, "svc")
			if p, ok := w[next+"-serve-svc"]; ok && (len(seen) == 0 || seen[len(seen)-1] != p) {
				seen = append(seen, p)
				g.Expect(w[old+"-serve-svc"] + p).To(Equal(int32(100)))
			}
			h.clock.Step(10 * time.Second)
			rs := h.rayService(g, ns, "svc")
			g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(Equal(next))
			g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
		}, 2*timeout, time.Second).Should(Succeed())

		t.Logf("pending cluster weights seen: %v", seen)
		g.Expect(seen).To(ContainElement(int32(100)))
		g.Expect(len(seen)).To(BeNumerically(">=", 4), "weights seen: %v", seen) // 0, 25, 50, ... 100
		for i := 1; i < len(seen); i++ {
			g.Expect(seen[i]).To(BeNumerically(">", seen[i-1]), "weights seen: %v", seen)
		}
		g.Expect(h.dash.Cluster(ns, next).TargetCapacity()).To(Equal(ptr.To[int32](100)))
		g.Expect(h.dash.Cluster(ns, old).TargetCapacity()).To(Equal(ptr.To[int32](0)))
		g.Eventually(func(g Gomega) {
			g.Expect(h.routeWeights(g, ns, "svc")).To(Equal(map[string]int32{next + "-serve-svc": 100}))
			var headSvc corev1.Service
			g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "svc-head-svc"}, &headSvc)).To(Succeed())
			g.Expect(headSvc.Spec.Selector).To(HaveKeyWithValue(labels.Cluster, next))
			g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.UpgradeInProgress).Status).To(Equal(metav1.ConditionFalse))
			var rc rayv1.RayCluster
			g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: old}, &rc)).To(Succeed())
			g.Expect(rc.Annotations).To(HaveKey(labels.DeleteAfter))
		}, timeout, interval).Should(Succeed())

		// Settled after the upgrade: the Gateway and the HTTPRoute the API server defaulted are
		// not written again, nor anything else.
		writes := h.writes.Load()
		g.Consistently(func(g Gomega) {
			h.syncEndpoints(g, ns, next+"-serve-svc")
			g.Expect(h.writes.Load()).To(Equal(writes))
		}, settle, interval).Should(Succeed())
	})

	t.Run("incremental upgrade reverted mid-way rolls back to the active cluster", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "rollback")
		rs := raybuilder.MakeRayService("svc", ns).Incremental(50, 25, 10).Obj()
		old := h.deployIncremental(g, ns, rs)

		h.update(g, ns, "svc", func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, "rayproject/ray:2.53.0") })
		next := h.waitForPending(g, ns, "svc")
		h.bringUp(g, ns, next)
		g.Eventually(func(g Gomega) {
			g.Expect(h.routeWeights(g, ns, "svc")).To(HaveKey(next + "-serve-svc"))
			h.acceptGateway(g, ns, "svc")
		}, timeout, interval).Should(Succeed())
		// Let traffic reach the pending cluster.
		g.Eventually(func(g Gomega) {
			h.syncEndpoints(g, ns, next+"-serve-svc")
			h.clock.Step(10 * time.Second)
			g.Expect(h.routeWeights(g, ns, "svc")[next+"-serve-svc"]).To(BeNumerically(">=", 50))
		}, 2*timeout, time.Second).Should(Succeed())

		h.update(g, ns, "svc", func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, raybuilder.RayImage) })
		g.Eventually(func(g Gomega) {
			g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.RollbackInProgress).Reason).To(Equal(string(rayv1.TargetClusterChanged)))
		}, timeout, interval).Should(Succeed())
		g.Eventually(func(g Gomega) {
			h.syncEndpoints(g, ns, old+"-serve-svc")
			h.clock.Step(10 * time.Second)
			rs := h.rayService(g, ns, "svc")
			g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
			g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(Equal(old))
			g.Expect(condition(rs, rayv1.RollbackInProgress).Type).To(BeEmpty())
			g.Expect(condition(rs, rayv1.UpgradeInProgress).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(h.routeWeights(g, ns, "svc")).To(Equal(map[string]int32{old + "-serve-svc": 100}))
		}, 2*timeout, time.Second).Should(Succeed())
		g.Expect(h.dash.Cluster(ns, old).TargetCapacity()).To(Equal(ptr.To[int32](100)))
		g.Eventually(func(g Gomega) {
			var rc rayv1.RayCluster
			g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: next}, &rc)).To(Succeed())
			g.Expect(rc.Annotations).To(HaveKey(labels.DeleteAfter))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(h.rayService(g, ns, "svc").Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
		}, 2*time.Second, interval).Should(Succeed())
	})

	t.Run("invalid RayService: ValidationFailed, no cluster", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "invalid")
		rs := raybuilder.MakeRayService("svc", ns).ServeConfig("applications: [").Obj()
		g.Expect(h.c.Create(ctx, rs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := h.rayService(g, ns, "svc")
			c := condition(got, rayv1.RayServiceReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(string(rayv1.RayServiceValidationFailed)))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(h.events(g, ns, "svc")).To(ContainElement(reasonInvalidSpec))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) { g.Expect(h.clusters(g, ns)).To(BeEmpty()) }, 2*time.Second, interval).Should(Succeed())

		h.update(g, ns, "svc", func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = raybuilder.RayServiceServeConfig })
		h.waitForPending(g, ns, "svc")
		g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady).Reason).To(Equal(string(rayv1.RayServiceInitializing)))
	})

	t.Run("token auth: the dashboard gets the cluster's token", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "auth")
		rs := raybuilder.MakeRayService("svc", ns).Obj()
		rs.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
		g.Expect(h.c.Create(ctx, rs)).To(Succeed())
		rc := h.waitForPending(g, ns, "svc")
		g.Expect(h.c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: rc, Namespace: ns, Labels: map[string]string{labels.Cluster: rc}},
			Data:       map[string][]byte{"auth_token": []byte("s3cret")},
		})).To(Succeed())
		h.bringUp(g, ns, rc)
		h.waitReady(g, ns, "svc", rc)
		g.Expect(h.dash.Cluster(ns, rc).LastAuthorization()).To(Equal("Bearer s3cret"))
	})

	t.Run("deletion waits for the clusters, then drops the finalizer", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "deletion")
		h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Obj())
		g.Expect(h.c.Delete(ctx, h.rayService(g, ns, "svc"))).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(h.clusters(g, ns)).To(BeEmpty())
			g.Expect(h.exists(ns, "svc", &rayv1.RayService{})).To(BeFalse())
		}, timeout, interval).Should(Succeed())
	})
}

// deploy creates rs, plays its first cluster up and waits until it is Ready; it returns the
// cluster's name.
func (h *harness) deploy(g Gomega, ns string, rs *rayv1.RayService) string {
	g.Expect(h.c.Create(context.Background(), rs)).To(Succeed())
	rc := h.waitForPending(g, rs.Namespace, rs.Name)
	h.bringUp(g, ns, rc)
	h.waitReady(g, ns, rs.Name, rc)
	return rc
}

// deployIncremental is deploy for a RayService that upgrades incrementally: its serve traffic
// goes through the cluster's own serve Service.
func (h *harness) deployIncremental(g Gomega, ns string, rs *rayv1.RayService) string {
	g.Expect(h.c.Create(context.Background(), rs)).To(Succeed())
	rc := h.waitForPending(g, ns, rs.Name)
	h.bringUp(g, ns, rc)
	g.Eventually(func(g Gomega) {
		h.syncEndpoints(g, ns, rc+"-serve-svc")
		got := h.rayService(g, ns, rs.Name)
		g.Expect(got.Status.ActiveServiceStatus.RayClusterName).To(Equal(rc))
		g.Expect(condition(got, rayv1.RayServiceReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(h.routeWeights(g, ns, rs.Name)).To(Equal(map[string]int32{rc + "-serve-svc": 100}))
	}, timeout, interval).Should(Succeed())
	return rc
}

// waitReady waits until the RayService serves from cluster: active, no pending cluster, Ready
// with endpoints (playing the EndpointSlice controller meanwhile).
func (h *harness) waitReady(g Gomega, ns, name, cluster string) {
	g.Eventually(func(g Gomega) {
		h.syncEndpoints(g, ns, name+"-serve-svc")
		rs := h.rayService(g, ns, name)
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(Equal(cluster))
		g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(BeEmpty())
		g.Expect(condition(rs, rayv1.RayServiceReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(rs.Status.ServiceStatus).To(Equal(rayv1.Running))
		g.Expect(rs.Status.NumServeEndpoints).To(Equal(int32(1)))
	}, timeout, interval).Should(Succeed())
}

// routeWeights returns the HTTPRoute's backend weights by Service name.
func (h *harness) routeWeights(g Gomega, ns, rsName string) map[string]int32 {
	var route gwv1.HTTPRoute
	if !h.exists(ns, rsName+"-httproute", &route) {
		return nil
	}
	out := map[string]int32{}
	for _, rule := range route.Spec.Rules {
		for _, b := range rule.BackendRefs {
			out[string(b.Name)] = ptr.Deref(b.Weight, 1)
		}
	}
	return out
}
