package raycluster

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestRayClusterReconciler(t *testing.T) {
	h := startHarness(t, nil)
	ctx := context.Background()

	t.Run("creates head, workers and head Service, then reports ready", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "lifecycle")
		rc := raybuilder.MakeRayCluster("rc", ns).WorkerGroup("small", 2, 0, 5).Obj()
		g.Expect(h.c.Create(ctx, rc)).To(Succeed())

		g.Eventually(func(g Gomega) {
			g.Expect(h.pods(g, ns, "rc", rayv1.HeadNode)).To(HaveLen(1))
			g.Expect(h.pods(g, ns, "rc", rayv1.WorkerNode)).To(HaveLen(2))
		}, timeout, interval).Should(Succeed())
		var svcs corev1.ServiceList
		g.Expect(h.c.List(ctx, &svcs, client.InNamespace(ns))).To(Succeed())
		g.Expect(svcs.Items).To(HaveLen(1))
		g.Expect(svcs.Items[0].Labels).To(HaveKeyWithValue(labels.NodeType, "head"))

		for _, p := range h.pods(g, ns, "rc", rayv1.WorkerNode) {
			g.Expect(p.Labels).To(HaveKeyWithValue(labels.Group, "small"))
			g.Expect(p.OwnerReferences).To(HaveLen(1))
		}
		g.Eventually(func(g Gomega) {
			got := h.get(g, ns, "rc")
			g.Expect(got.Status.DesiredWorkerReplicas).To(Equal(int32(2)))
			g.Expect(conditionStatus(got, rayv1.HeadPodReady)).To(Equal(metav1.ConditionFalse))
		}, timeout, interval).Should(Succeed())

		h.makeReady(g, ns, "rc")
		g.Eventually(func(g Gomega) {
			got := h.get(g, ns, "rc")
			g.Expect(got.Status.State).To(Equal(rayv1.Ready))
			g.Expect(got.Status.ReadyWorkerReplicas).To(Equal(int32(2)))
			g.Expect(conditionStatus(got, rayv1.HeadPodReady)).To(Equal(metav1.ConditionTrue))
			g.Expect(conditionStatus(got, rayv1.RayClusterProvisioned)).To(Equal(metav1.ConditionTrue))
			g.Expect(got.Status.Head.PodName).NotTo(BeEmpty())
			g.Expect(got.Status.Endpoints).To(HaveKey("dashboard"))
		}, timeout, interval).Should(Succeed())

		// A settled cluster is not rewritten: another reconcile (an annotation change) makes
		// no status write.
		before := h.writes.get("rc")
		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{"touch": "1"} })
		g.Consistently(func() int { return h.writes.get("rc") }, "1s", interval).Should(Equal(before))
	})

	t.Run("scales up, scales down and honours workersToDelete", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "scaling")
		g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster("rc", ns).WorkerGroup("g", 1, 0, 5).Obj())).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", rayv1.WorkerNode)).To(HaveLen(1)) }, timeout, interval).Should(Succeed())

		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
		g.Eventually(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", rayv1.WorkerNode)).To(HaveLen(3)) }, timeout, interval).Should(Succeed())

		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2) })
		g.Eventually(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", rayv1.WorkerNode)).To(HaveLen(2)) }, timeout, interval).Should(Succeed())

		victim := h.pods(g, ns, "rc", rayv1.WorkerNode)[0].Name
		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) {
			rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1)
			rc.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{victim}
		})
		g.Eventually(func(g Gomega) {
			pods := h.pods(g, ns, "rc", rayv1.WorkerNode)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Name).NotTo(Equal(victim))
			g.Expect(h.get(g, ns, "rc").Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
	})

	t.Run("autoscaled groups are not scaled down by the operator", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "autoscaled")
		rc := raybuilder.MakeRayCluster("rc", ns).WorkerGroup("g", 2, 0, 5).EnableInTreeAutoscaling().Obj()
		g.Expect(h.c.Create(ctx, rc)).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", rayv1.WorkerNode)).To(HaveLen(2)) }, timeout, interval).Should(Succeed())
		var sa corev1.ServiceAccount
		g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rc"}, &sa)).To(Succeed())

		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](1) })
		g.Consistently(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", rayv1.WorkerNode)).To(HaveLen(2)) }, "1s", interval).Should(Succeed())
	})

	t.Run("suspends atomically and resumes", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "suspend")
		g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster("rc", ns).WorkerGroup("g", 2, 0, 5).Obj())).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", "")).To(HaveLen(3)) }, timeout, interval).Should(Succeed())

		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
		g.Eventually(func(g Gomega) {
			g.Expect(h.pods(g, ns, "rc", "")).To(BeEmpty())
			got := h.get(g, ns, "rc")
			g.Expect(conditionStatus(got, rayv1.RayClusterSuspended)).To(Equal(metav1.ConditionTrue))
			g.Expect(conditionStatus(got, rayv1.RayClusterSuspending)).To(Equal(metav1.ConditionFalse))
			g.Expect(got.Status.State).To(Equal(rayv1.Suspended))
		}, timeout, interval).Should(Succeed())

		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) })
		g.Eventually(func(g Gomega) {
			g.Expect(h.pods(g, ns, "rc", "")).To(HaveLen(3))
			g.Expect(conditionStatus(h.get(g, ns, "rc"), rayv1.RayClusterSuspended)).To(Equal(metav1.ConditionFalse))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("Recreate upgrade replaces every Pod on a template change", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "recreate")
		rc := raybuilder.MakeRayCluster("rc", ns).WorkerGroup("g", 1, 0, 5).UpgradeStrategy(rayv1.RayClusterRecreate).Obj()
		g.Expect(h.c.Create(ctx, rc)).To(Succeed())
		var old []corev1.Pod
		g.Eventually(func(g Gomega) { old = h.pods(g, ns, "rc", ""); g.Expect(old).To(HaveLen(2)) }, timeout, interval).Should(Succeed())

		// A replicas change alone is not an upgrade.
		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](2) })
		g.Eventually(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", "")).To(HaveLen(3)) }, timeout, interval).Should(Succeed())
		g.Expect(h.pods(g, ns, "rc", rayv1.HeadNode)[0].UID).To(Equal(headOf(old).UID))

		h.update(g, ns, "rc", func(rc *rayv1.RayCluster) {
			rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		})
		g.Eventually(func(g Gomega) {
			pods := h.pods(g, ns, "rc", "")
			g.Expect(pods).To(HaveLen(3))
			g.Expect(headOf(pods).UID).NotTo(Equal(headOf(old).UID))
			for _, p := range pods {
				if p.Labels[labels.NodeType] == string(rayv1.WorkerNode) {
					g.Expect(p.Spec.Containers[0].Image).To(Equal("rayproject/ray:2.53.0"))
				}
			}
		}, timeout, interval).Should(Succeed())
	})

	t.Run("recreates a deleted or failed head Pod", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "head")
		g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster("rc", ns).Obj())).To(Succeed())
		var head corev1.Pod
		g.Eventually(func(g Gomega) {
			heads := h.pods(g, ns, "rc", rayv1.HeadNode)
			g.Expect(heads).To(HaveLen(1))
			head = heads[0]
		}, timeout, interval).Should(Succeed())

		g.Expect(h.c.Delete(ctx, &head)).To(Succeed())
		g.Eventually(func(g Gomega) {
			heads := h.pods(g, ns, "rc", rayv1.HeadNode)
			g.Expect(heads).To(HaveLen(1))
			g.Expect(heads[0].UID).NotTo(Equal(head.UID))
			head = heads[0]
		}, timeout, interval).Should(Succeed())

		head.Status.Phase = corev1.PodFailed
		g.Expect(h.c.Status().Update(ctx, &head)).To(Succeed())
		g.Eventually(func(g Gomega) {
			heads := h.pods(g, ns, "rc", rayv1.HeadNode)
			g.Expect(heads).To(HaveLen(1))
			g.Expect(heads[0].UID).NotTo(Equal(head.UID))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("invalid spec and foreign managedBy create nothing", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "invalid")
		bad := raybuilder.MakeRayCluster("bad", ns).WorkerGroup("g", 1, 3, 2).Obj()
		foreign := raybuilder.MakeRayCluster("foreign", ns).ManagedBy("kueue.x-k8s.io/multikueue").Obj()
		g.Expect(h.c.Create(ctx, bad)).To(Succeed())
		g.Expect(h.c.Create(ctx, foreign)).To(Succeed())
		g.Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(h.c.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			reasons := map[string]bool{}
			for _, e := range events.Items {
				if e.InvolvedObject.Name == "bad" && e.Type == corev1.EventTypeWarning {
					reasons[e.Reason] = true
				}
			}
			g.Expect(reasons).To(HaveKey(reasonInvalidSpec))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(h.pods(g, ns, "bad", "")).To(BeEmpty())
			g.Expect(h.pods(g, ns, "foreign", "")).To(BeEmpty())
		}, "1s", interval).Should(Succeed())
	})

	t.Run("multi-host groups are created and replaced whole", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(t, g, "multihost")
		rc := raybuilder.MakeRayCluster("rc", ns).WorkerGroup("tpu", 2, 0, 4).NumOfHosts("tpu", 2).Obj()
		g.Expect(h.c.Create(ctx, rc)).To(Succeed())
		var workers []corev1.Pod
		g.Eventually(func(g Gomega) {
			workers = h.pods(g, ns, "rc", rayv1.WorkerNode)
			g.Expect(workers).To(HaveLen(4))
		}, timeout, interval).Should(Succeed())
		replicas := map[string][]string{}
		for _, p := range workers {
			g.Expect(p.Labels).To(HaveKey(labels.WorkerReplicaIndex))
			g.Expect(p.Labels).To(HaveKey(labels.HostIndex))
			replicas[p.Labels[labels.WorkerReplicaName]] = append(replicas[p.Labels[labels.WorkerReplicaName]], p.Name)
		}
		g.Expect(replicas).To(HaveLen(2))
		var headless corev1.ServiceList
		g.Expect(h.c.List(ctx, &headless, client.InNamespace(ns), client.MatchingLabels{labels.HeadlessWorkerService: "rc"})).To(Succeed())
		g.Expect(headless.Items).To(HaveLen(1))

		// Losing one host loses the replica: its sibling goes too and a new replica comes.
		victim := workers[0]
		sibling := ""
		for _, p := range workers[1:] {
			if p.Labels[labels.WorkerReplicaName] == victim.Labels[labels.WorkerReplicaName] {
				sibling = p.Name
			}
		}
		g.Expect(h.c.Delete(ctx, &victim)).To(Succeed())
		g.Eventually(func(g Gomega) {
			now := h.pods(g, ns, "rc", rayv1.WorkerNode)
			g.Expect(now).To(HaveLen(4))
			for _, p := range now {
				g.Expect(p.Name).NotTo(Equal(sibling))
			}
		}, timeout, interval).Should(Succeed())
	})
}

func headOf(pods []corev1.Pod) corev1.Pod {
	for _, p := range pods {
		if p.Labels[labels.NodeType] == string(rayv1.HeadNode) {
			return p
		}
	}
	return corev1.Pod{}
}
