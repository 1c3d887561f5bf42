package rayservice

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// boundaryCondition returns the RayService's condition of type t, nil when absent.
func boundaryCondition(g Gomega, h *harness, ns, name, t string) *metav1.Condition {
	return meta.FindStatusCondition(h.rayService(g, ns, name).Status.Conditions, t)
}

// TestOnlyOwnedObjects: objects of the names a RayService would write that it does not control
// (another application's Service named as its serveService, a Gateway of its Gateway's name) are
// left exactly as they are, and the RayService says so in an event and OwnershipConflict; and a
// RayCluster's refused Pods reach the RayService's status, which the hub reads.
func TestOnlyOwnedObjects(t *testing.T) {
	h := startHarness(t)
	ctx := context.Background()

	t.Run("a serveService named after another application's Service is not repointed", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "takeover")
		web := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid", Controller: ptr.To(true)}}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		g.Expect(h.c.Create(ctx, web)).To(Succeed())
		want := h.service(g, ns, "web")

		rs := raybuilder.MakeRayService("svc", ns).Obj()
		rs.Spec.ServeService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		g.Expect(h.c.Create(ctx, rs)).To(Succeed())
		rc := h.waitForPending(g, ns, "svc")
		h.bringUp(g, ns, rc)

		g.Eventually(func(g Gomega) {
			c := boundaryCondition(g, h, ns, "svc", fleetv1alpha1.ConditionOwnershipConflict)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonNotControlled))
			g.Expect(c.Message).To(ContainSubstring("Service " + ns + "/web is controlled by Deployment web, not by RayService svc"))
			g.Expect(h.eventNote(g, ns, "svc", reasonOwnershipConflict)).To(ContainSubstring("Service " + ns + "/web"))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			got := h.service(g, ns, "web")
			g.Expect(got.Spec.Selector).To(Equal(want.Spec.Selector))
			g.Expect(got.Spec.Ports).To(Equal(want.Spec.Ports))
			g.Expect(got.OwnerReferences).To(Equal(want.OwnerReferences))
			g.Expect(got.ResourceVersion).To(Equal(want.ResourceVersion))
		}, settle, interval).Should(Succeed())
		// Its own head Service it still points.
		g.Expect(h.service(g, ns, "svc-head-svc").Spec.Selector).To(HaveKeyWithValue("ray.io/cluster", rc))
	})

	t.Run("a Gateway of another application keeps its class and listeners", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "gateway")
		theirs := &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: "svc-gateway", Namespace: ns},
			Spec: gwv1.GatewaySpec{GatewayClassName: "shared-lb", Listeners: []gwv1.Listener{{
				Name: "https", Port: 443, Protocol: gwv1.HTTPSProtocolType, Hostname: ptr.To(gwv1.Hostname("shop.example.com")),
			}}},
		}
		g.Expect(h.c.Create(ctx, theirs)).To(Succeed())
		var want gwv1.Gateway
		g.Expect(h.c.Get(ctx, client.ObjectKeyFromObject(theirs), &want)).To(Succeed())

		g.Expect(h.c.Create(ctx, raybuilder.MakeRayService("svc", ns).Incremental(50, 25, 10).Obj())).To(Succeed())
		rc := h.waitForPending(g, ns, "svc")
		h.bringUp(g, ns, rc)

		g.Eventually(func(g Gomega) {
			c := boundaryCondition(g, h, ns, "svc", fleetv1alpha1.ConditionOwnershipConflict)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("Gateway " + ns + "/svc-gateway has no controller, not by RayService svc"))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			var got gwv1.Gateway
			g.Expect(h.c.Get(ctx, client.ObjectKeyFromObject(theirs), &got)).To(Succeed())
			g.Expect(got.ResourceVersion).To(Equal(want.ResourceVersion))
			g.Expect(got.Spec).To(Equal(want.Spec))
			// No route is hung on a Gateway that is not the RayService's.
			g.Expect(h.exists(ns, "svc-httproute", &gwv1.HTTPRoute{})).To(BeFalse())
		}, settle, interval).Should(Succeed())
	})

	t.Run("a RayCluster's refused Pods are in the RayService's status", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "forbidden")
		g.Expect(h.c.Create(ctx, raybuilder.MakeRayService("svc", ns).Obj())).To(Succeed())
		rc := h.waitForPending(g, ns, "svc")
		refusal := `worker group small violates PodSecurity "baseline": privileged (container "ray-worker" must not set securityContext.privileged=true)`
		// Play the RayCluster controller refusing the Pods.
		g.Eventually(func() error {
			var cluster rayv1.RayCluster
			if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rc}, &cluster); err != nil {
				return err
			}
			meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionPodsForbidden,
				Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonPodSecurityViolation, Message: refusal})
			return h.c.Status().Update(ctx, &cluster)
		}, timeout, interval).Should(Succeed())

		g.Eventually(func(g Gomega) {
			c := boundaryCondition(g, h, ns, "svc", fleetv1alpha1.ConditionPodsForbidden)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring("RayCluster " + rc + ": " + refusal))
			// The hub shows a member's Ready message.
			g.Expect(condition(h.rayService(g, ns, "svc"), rayv1.RayServiceReady).Message).To(ContainSubstring(refusal))
		}, timeout, interval).Should(Succeed())
	})
}

// service returns the Service ns/name.
func (h *harness) service(g Gomega, ns, name string) *corev1.Service {
	var svc corev1.Service
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &svc)).To(Succeed())
	return &svc
}
