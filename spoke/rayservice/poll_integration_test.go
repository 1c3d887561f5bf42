package rayservice

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// TestServePolls reconciles a RayService itself, on the fake clock, once every second of it:
// more often than anything could make the controller reconcile it. A settled RayService still
// reads its dashboard only every 10 s and never asks its head's proxy, and an application that
// fails is reported within 10 s.
func TestServePolls(t *testing.T) {
	h := startHarness(t, driven())
	g := NewWithT(t)
	ns := h.namespace(g, "polls")
	rc := h.deployDriven(g, ns, raybuilder.MakeRayService("svc", ns).Obj())
	dash := h.dash.Cluster(ns, rc)

	// The config was submitted at deploy time, and the clock has stood still since: the
	// submission is still recent. Once it is not, the RayService settles.
	h.clock.Step(defaultChangingPoll)
	g.Expect(h.reconcile(g, ns, "svc").RequeueAfter).To(Equal(defaultStablePoll), "settled: requeued when the next read is due")

	t.Run("a settled RayService: 6 dashboard calls a minute, no proxy health check, no write", func(t *testing.T) {
		g := NewWithT(t)
		gets, health, writes := dash.Requests(raydashboard.OpServeDetails), dash.Requests(raydashboard.OpProxyHealth), h.writes.Load()
		for range 60 {
			h.clock.Step(time.Second)
			g.Expect(h.reconcile(g, ns, "svc").RequeueAfter).To(BeNumerically("<=", defaultStablePoll))
		}
		g.Expect(dash.Requests(raydashboard.OpServeDetails)-gets).To(Equal(6), "a read every 10 s")
		g.Expect(dash.Requests(raydashboard.OpProxyHealth)-health).To(BeZero(), "Kubernetes reports the head ready")
		g.Expect(dash.Submissions()).To(Equal(1))
		g.Expect(h.writes.Load()).To(Equal(writes))

		// At the controller's own pace, following RequeueAfter, the same minute costs the same.
		gets = dash.Requests(raydashboard.OpServeDetails)
		reconciles := 0
		for start := h.clock.Now(); h.clock.Since(start) < time.Minute; reconciles++ {
			h.clock.Step(h.reconcile(g, ns, "svc").RequeueAfter)
		}
		g.Expect(dash.Requests(raydashboard.OpServeDetails) - gets).To(BeNumerically("<=", 6))
		g.Expect(reconciles).To(BeNumerically("<=", 7), "a settled RayService is reconciled when its read is due")
	})

	t.Run("an application turning UNHEALTHY is reported within 10 s, then read every 2 s", func(t *testing.T) {
		g := NewWithT(t)
		h.clock.Step(h.reconcile(g, ns, "svc").RequeueAfter)
		h.reconcile(g, ns, "svc") // a read, due now: the next one is 10 s away
		dash.SetFault(raydashboard.Fault{Unhealthy: true})
		h.expectReportedWithin(g, ns, rc, "UNHEALTHY", defaultStablePoll)

		gets := dash.Requests(raydashboard.OpServeDetails)
		g.Expect(h.reconcile(g, ns, "svc").RequeueAfter).To(Equal(defaultChangingPoll))
		g.Expect(dash.Requests(raydashboard.OpServeDetails)).To(Equal(gets+1), "read on every reconcile while failing")

		dash.SetFault(raydashboard.Fault{})
		h.clock.Step(defaultChangingPoll)
		g.Expect(h.reconcile(g, ns, "svc").RequeueAfter).To(Equal(defaultStablePoll), "RUNNING again: settled")
		g.Expect(h.rayService(g, ns, "svc").Status.ActiveServiceStatus.Applications).To(HaveKeyWithValue("fruit", HaveField("Status", "RUNNING")))
		g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady).Message).NotTo(ContainSubstring("UNHEALTHY"))
	})

	t.Run("an application turning DEPLOY_FAILED is reported within 10 s", func(t *testing.T) {
		g := NewWithT(t)
		dash.SetFault(raydashboard.Fault{DeployFailed: true})
		h.expectReportedWithin(g, ns, rc, "DEPLOY_FAILED", defaultStablePoll)
	})
}

// expectReportedWithin steps the fake clock a second at a time, reconciling each time, until
// the RayService svc reports its application fruit in status (its applicationStatuses, the
// Ready condition's message, a Warning event) and checks that it took at most within.
func (h *harness) expectReportedWithin(g Gomega, ns, rc, status string, within time.Duration) {
	start := h.clock.Now()
	reported := func() bool {
		rs := h.rayService(g, ns, "svc")
		return rs.Status.ActiveServiceStatus.Applications["fruit"].Status == status
	}
	for !reported() {
		g.Expect(h.clock.Since(start)).To(BeNumerically("<", within), "%s not reported within %v", status, within)
		h.clock.Step(time.Second)
		h.reconcile(g, ns, "svc")
	}
	ready := condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "the application fails; its endpoints still serve")
	g.Expect(ready.Message).To(ContainSubstring("Serve application fruit on RayCluster %s is %s", rc, status))
	g.Eventually(func(g Gomega) {
		g.Expect(h.eventNotes(g, ns, "svc", reasonServeAppFailed)).To(
			ContainElement(ContainSubstring("fruit on the RayCluster %s/%s is %s", ns, rc, status)))
	}, timeout, interval).Should(Succeed())
}

// eventNotes returns the notes of the events about the RayService name with reason.
func (h *harness) eventNotes(g Gomega, ns, name, reason string) []string {
	var list eventsv1.EventList
	g.Expect(h.c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "RayService" && e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// deployDriven is deploy for a driven harness: it reconciles until the RayService is Ready.
func (h *harness) deployDriven(g Gomega, ns string, rs *rayv1.RayService) string {
	g.Expect(h.c.Create(context.Background(), rs)).To(Succeed())
	var rc string
	g.Eventually(func(g Gomega) {
		h.reconcile(g, ns, rs.Name)
		rc = h.rayService(g, ns, rs.Name).Status.PendingServiceStatus.RayClusterName
		g.Expect(rc).NotTo(BeEmpty())
		g.Expect(h.exists(ns, rc, &rayv1.RayCluster{})).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	h.bringUp(g, ns, rc)
	g.Eventually(func(g Gomega) {
		h.reconcile(g, ns, rs.Name)
		h.syncEndpoints(g, ns, rs.Name+"-serve-svc")
		got := h.rayService(g, ns, rs.Name)
		g.Expect(got.Status.ActiveServiceStatus.RayClusterName).To(Equal(rc))
		g.Expect(condition(got, rayv1.RayServiceReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(got.Status.ActiveServiceStatus.Applications).To(HaveKeyWithValue("fruit", HaveField("Status", "RUNNING")))
	}, timeout, interval).Should(Succeed())
	return rc
}

// headLabelFollowsKubernetes: the head Pod's Serve proxy is not asked while Kubernetes reports
// the head ready, even once the proxy stops answering; when the kubelet and the EndpointSlice
// controller report it not ready, the proxy is asked and the head leaves the serve Service, and
// it joins again once its proxy answers.
func headLabelFollowsKubernetes(t *testing.T, h *harness) {
	g := NewWithT(t)
	ns := h.namespace(g, "head-label")
	rc := h.deploy(g, ns, raybuilder.MakeRayService("svc", ns).Obj())
	head := rc + "-head"
	dash := h.dash.Cluster(ns, rc)

	dash.SetFault(raydashboard.Fault{ProxyUnhealthy: true})
	health := dash.Requests(raydashboard.OpProxyHealth)
	g.Consistently(func(g Gomega) {
		g.Expect(h.headLabel(g, ns, head)).To(Equal(labels.True))
		g.Expect(dash.Requests(raydashboard.OpProxyHealth)).To(Equal(health))
	}, 3*time.Second, interval).Should(Succeed())

	h.setPodReady(g, ns, head, false)
	h.setEndpointReady(g, ns, "svc-serve-svc", head, false)
	g.Eventually(func(g Gomega) {
		g.Expect(h.headLabel(g, ns, head)).To(Equal(labels.False))
	}, timeout, interval).Should(Succeed())
	g.Expect(dash.Requests(raydashboard.OpProxyHealth)).To(BeNumerically(">", health))
	g.Eventually(func(g Gomega) {
		h.syncEndpoints(g, ns, "svc-serve-svc")
		rs := h.rayService(g, ns, "svc")
		g.Expect(rs.Status.NumServeEndpoints).To(BeZero())
		g.Expect(condition(rs, rayv1.RayServiceReady).Status).To(Equal(metav1.ConditionFalse))
	}, timeout, interval).Should(Succeed())

	dash.SetFault(raydashboard.Fault{})
	h.setPodReady(g, ns, head, true)
	g.Eventually(func(g Gomega) {
		h.syncEndpoints(g, ns, "svc-serve-svc")
		g.Expect(h.headLabel(g, ns, head)).To(Equal(labels.True))
		g.Expect(h.rayService(g, ns, "svc").Status.NumServeEndpoints).To(Equal(int32(1)))
	}, timeout, interval).Should(Succeed())
}

// headLabel returns the ray.io/serve label of the Pod ns/name.
func (h *harness) headLabel(g Gomega, ns, name string) string {
	var pod corev1.Pod
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod)).To(Succeed())
	return pod.Labels[labels.Serve]
}

// setPodReady plays the kubelet: the Pod's Ready condition turns ready.
func (h *harness) setPodReady(g Gomega, ns, name string, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	g.Eventually(func() error {
		var pod corev1.Pod
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
			return err
		}
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == corev1.PodReady || pod.Status.Conditions[i].Type == corev1.ContainersReady {
				pod.Status.Conditions[i].Status = status
			}
		}
		return h.c.Status().Update(context.Background(), &pod)
	}, timeout, interval).Should(Succeed())
}

// setEndpointReady plays the EndpointSlice controller for one Pod of the Service svc: its
// endpoint in the Service's slice turns ready, or not.
func (h *harness) setEndpointReady(g Gomega, ns, svc, pod string, ready bool) {
	g.Eventually(func(g Gomega) {
		var slice discoveryv1.EndpointSlice
		g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: svc + "-slice"}, &slice)).To(Succeed())
		found := false
		for i := range slice.Endpoints {
			if ref := slice.Endpoints[i].TargetRef; ref != nil && ref.Name == pod {
				slice.Endpoints[i].Conditions.Ready = ptr.To(ready)
				found = true
			}
		}
		g.Expect(found).To(BeTrue(), "Pod %s in the slice of %s", pod, svc)
		g.Expect(h.c.Update(context.Background(), &slice)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}
