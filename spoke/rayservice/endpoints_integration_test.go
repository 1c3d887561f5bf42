package rayservice

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// TestServeEndpointsFromAnySlice gives a RayService's serve Service only slices that no
// EndpointSlice controller made (as a mesh, a user or an MCS implementation would: nothing but
// kubernetes.io/service-name), and finds them counted as KubeRay counts them.
func TestServeEndpointsFromAnySlice(t *testing.T) {
	h := startHarness(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := h.namespace(g, "foreign-slices")
	g.Expect(h.c.Create(ctx, raybuilder.MakeRayService("svc", ns).Obj())).To(Succeed())
	rc := h.waitForPending(g, ns, "svc")
	h.bringUp(g, ns, rc)
	var head corev1.Pod
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rc + "-head"}, &head)).To(Succeed())

	h.foreignSlice(g, ns, "mesh-a", "svc-serve-svc", map[types.UID]bool{head.UID: true})
	g.Eventually(func(g Gomega) {
		rs := h.rayService(g, ns, "svc")
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(Equal(rc))
		g.Expect(rs.Status.NumServeEndpoints).To(Equal(int32(1)))
		g.Expect(condition(rs, rayv1.RayServiceReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(rs, rayv1.RayServiceReady).Reason).To(Equal(string(rayv1.NonZeroServeEndpoints)))
	}, timeout, interval).Should(Succeed())

	// A second slice: its ready Pod adds one, the head it lists again does not.
	h.foreignSlice(g, ns, "mesh-b", "svc-serve-svc", map[types.UID]bool{head.UID: true, "remote": true, "draining": false})
	g.Eventually(func(g Gomega) {
		g.Expect(h.rayService(g, ns, "svc").Status.NumServeEndpoints).To(Equal(int32(2)))
	}, timeout, interval).Should(Succeed())

	// Every endpoint not ready: none to serve from, and Ready falls.
	h.foreignSlice(g, ns, "mesh-a", "svc-serve-svc", map[types.UID]bool{head.UID: false})
	h.foreignSlice(g, ns, "mesh-b", "svc-serve-svc", map[types.UID]bool{head.UID: false, "remote": false})
	g.Eventually(func(g Gomega) {
		rs := h.rayService(g, ns, "svc")
		g.Expect(rs.Status.NumServeEndpoints).To(BeZero())
		g.Expect(condition(rs, rayv1.RayServiceReady).Reason).To(Equal(string(rayv1.ZeroServeEndpoints)))
	}, timeout, interval).Should(Succeed())
}

// foreignSlice creates or replaces the slice ns/name of the Service svc as something other than
// the EndpointSlice controller makes it: labelled with the Service's name alone, one endpoint
// per Pod UID, ready or not, with two addresses each.
func (h *harness) foreignSlice(g Gomega, ns, name, svc string, pods map[types.UID]bool) {
	ctx := context.Background()
	endpoints := []discoveryv1.Endpoint{}
	for uid, ready := range pods {
		endpoints = append(endpoints, discoveryv1.Endpoint{
			Addresses:  []string{"192.0.2.1", "192.0.2.2"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(!ready)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: string(uid), UID: uid},
		})
	}
	want := discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints,
	}
	var have discoveryv1.EndpointSlice
	err := h.c.Get(ctx, client.ObjectKeyFromObject(&want), &have)
	if apierrors.IsNotFound(err) {
		g.Expect(h.c.Create(ctx, &want)).To(Succeed())
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	have.Endpoints = want.Endpoints
	g.Expect(h.c.Update(ctx, &have)).To(Succeed())
}
