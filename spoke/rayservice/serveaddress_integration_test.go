package rayservice

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/names"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// withServeType asks for a serve Service of type typ through spec.serveService, as a user
// would.
func withServeType(rs *rayv1.RayService, typ corev1.ServiceType) *rayv1.RayService {
	rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: typ}}
	return rs
}

// serveAnnotations returns the serve-address annotations of ns/name, "" when absent.
func (h *harness) serveAnnotations(g Gomega, ns, name string) (address, why string) {
	a := h.rayService(g, ns, name).Annotations
	return a[labels.ServeAddress], a[labels.NoServeAddress]
}

// expectServeAddress waits until ns/name carries address and no NoServeAddress.
func (h *harness) expectServeAddress(g Gomega, ns, name, address string) {
	g.Eventually(func(g Gomega) {
		a := h.rayService(g, ns, name).Annotations
		g.Expect(a).To(HaveKeyWithValue(labels.ServeAddress, address))
		g.Expect(a).NotTo(HaveKey(labels.NoServeAddress))
	}, timeout, interval).Should(Succeed())
}

// setIngress plays the LoadBalancer controller: svc's ingress becomes ingress.
func (h *harness) setIngress(g Gomega, ns, svc string, ingress corev1.LoadBalancerIngress) {
	g.Eventually(func() error {
		var s corev1.Service
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: svc}, &s); err != nil {
			return err
		}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{ingress}
		return h.c.Status().Update(context.Background(), &s)
	}, timeout, interval).Should(Succeed())
}

// nodePort returns the node port of ns/svc's port named serve.
func (h *harness) nodePort(g Gomega, ns, svc string) int32 {
	var s corev1.Service
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: svc}, &s)).To(Succeed())
	for _, p := range s.Spec.Ports {
		if p.Name == "serve" {
			return p.NodePort
		}
	}
	return 0
}

// installServiceExportCRD installs the ServiceExport CRD that sigs.k8s.io/mcs-api ships.
func (h *harness) installServiceExportCRD(t *testing.T) {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(mcscrd.ServiceExportCRD, &crd); err != nil {
		t.Fatal(err)
	}
	if _, err := crenvtest.InstallCRDs(h.env.Config, crenvtest.CRDInstallOptions{
		CRDs: []*apiextensionsv1.CustomResourceDefinition{&crd}, MaxTime: timeout,
	}); err != nil {
		t.Fatal(err)
	}
}

func TestServeAddressAndExport(t *testing.T) {
	h := startHarness(t)

	t.Run("a hub copy's LoadBalancer serve Service: no address until an ingress, then the ingress's, following it", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "address-lb")
		h.deploy(g, ns, withServeType(hubMade(raybuilder.MakeRayService("svc", ns).Obj()), corev1.ServiceTypeLoadBalancer))
		port := h.nodePort(g, ns, "svc-serve-svc")
		g.Expect(port).NotTo(BeZero(), "the API server gives a LoadBalancer node ports")
		g.Eventually(func(g Gomega) {
			address, why := h.serveAnnotations(g, ns, "svc")
			g.Expect(address).To(BeEmpty())
			g.Expect(why).To(Equal(fmt.Sprintf("LoadBalancer serve Service svc-serve-svc has no ingress address yet, "+
				"and no Ready Node has an address for its node port %d", port)))
		}, timeout, interval).Should(Succeed())

		h.setIngress(g, ns, "svc-serve-svc", corev1.LoadBalancerIngress{IP: "198.51.100.7"})
		h.expectServeAddress(g, ns, "svc", "198.51.100.7:8000")
		h.setIngress(g, ns, "svc-serve-svc", corev1.LoadBalancerIngress{Hostname: "svc.lb.example.com"})
		h.expectServeAddress(g, ns, "svc", "svc.lb.example.com:8000")

		// Settled: the annotations cost no further write.
		patches := h.rsPatches.Load()
		g.Consistently(func(g Gomega) {
			h.syncEndpoints(g, ns, "svc-serve-svc")
			g.Expect(h.rsPatches.Load()).To(Equal(patches))
		}, settle, interval).Should(Succeed())
	})

	t.Run("a hub copy's NodePort serve Service: a Ready Node's address, read again after the Node list's TTL", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "address-nodeport")
		h.deploy(g, ns, withServeType(hubMade(raybuilder.MakeRayService("svc", ns).Obj()), corev1.ServiceTypeNodePort))
		port := h.nodePort(g, ns, "svc-serve-svc")
		g.Eventually(func(g Gomega) {
			_, why := h.serveAnnotations(g, ns, "svc")
			g.Expect(why).To(Equal(fmt.Sprintf("no Ready Node has an address for node port %d of serve Service svc-serve-svc", port)))
		}, timeout, interval).Should(Succeed())

		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "address-node"}}
		g.Expect(h.c.Create(context.Background(), n)).To(Succeed())
		t.Cleanup(func() { _ = h.c.Delete(context.Background(), n) })
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.99.0.5"}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		g.Expect(h.c.Status().Update(context.Background(), n)).To(Succeed())
		h.clock.Step(nodeListTTL + time.Second)
		h.expectServeAddress(g, ns, "svc", fmt.Sprintf("10.99.0.5:%d", port))
	})

	t.Run("a ClusterIP serve Service says how to get an address; a RayService without origin labels gets nothing", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "address-none")
		h.deploy(g, ns, hubMade(raybuilder.MakeRayService("hub", ns).Obj()))
		h.deploy(g, ns, withServeType(raybuilder.MakeRayService("own", ns).Obj(), corev1.ServiceTypeLoadBalancer))
		h.setIngress(g, ns, "own-serve-svc", corev1.LoadBalancerIngress{IP: "198.51.100.8"})
		g.Eventually(func(g Gomega) {
			address, why := h.serveAnnotations(g, ns, "hub")
			g.Expect(address).To(BeEmpty())
			g.Expect(why).To(Equal("serve Service hub-serve-svc is ClusterIP: set spec.serveService.spec.type to LoadBalancer or NodePort to route traffic to this member"))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			a := h.rayService(g, ns, "own").Annotations
			g.Expect(a).NotTo(HaveKey(labels.ServeAddress))
			g.Expect(a).NotTo(HaveKey(labels.NoServeAddress))
		}, settle, interval).Should(Succeed())
	})

	t.Run("a serve export keeps its Services without the ServiceExport kind, adds the ServiceExports once installed, and goes with the annotation", func(t *testing.T) {
		g := NewWithT(t)
		ns := h.namespace(g, "export")
		rs := hubMade(raybuilder.MakeRayService("svc", ns).Obj())
		rs.Annotations = map[string]string{labels.ServeExport: "ap"}
		h.deploy(g, ns, rs)
		name, legacyName := names.ServeExport("svc", "ap"), "svc-serve-ap"
		g.Expect(name).To(HavePrefix("svc-serve-ap-"))

		var serve, export, legacy corev1.Service
		g.Eventually(func(g Gomega) {
			g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "svc-serve-svc"}, &serve)).To(Succeed())
			g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &export)).To(Succeed())
			g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: legacyName}, &legacy)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		g.Expect(export.Annotations).NotTo(HaveKey(labels.LegacyServeExport))
		g.Expect(legacy.Annotations).To(HaveKeyWithValue(labels.LegacyServeExport, labels.True))
		g.Expect(legacy.Spec.Selector).To(Equal(serve.Spec.Selector), "hubs routing to the legacy name reach the same Pods")
		owner := h.rayService(g, ns, "svc")
		g.Expect(metav1.IsControlledBy(&export, owner)).To(BeTrue())
		g.Expect(export.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		g.Expect(export.Spec.Selector).To(Equal(serve.Spec.Selector))
		g.Expect(export.Spec.Ports).To(HaveLen(len(serve.Spec.Ports)))
		g.Expect(export.Spec.Ports[0].Port).To(Equal(serve.Spec.Ports[0].Port))
		g.Expect(export.Annotations).To(HaveKeyWithValue(labels.ServeExport, "ap"))
		g.Eventually(func(g Gomega) {
			g.Expect(h.eventNote(g, ns, "svc", reasonServiceExportNotInstalled)).To(ContainSubstring(
				"the ServiceExport kind (multicluster.x-k8s.io/v1alpha1) is not installed on this member; the Service is kept"))
		}, timeout, interval).Should(Succeed())

		h.installServiceExportCRD(t)
		h.clock.Step(exportKindRecheck + time.Second)
		var se, legacySE mcsv1alpha1.ServiceExport
		g.Eventually(func(g Gomega) {
			g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &se)).To(Succeed())
			g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: legacyName}, &legacySE)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		g.Expect(metav1.IsControlledBy(&se, owner)).To(BeTrue())
		g.Expect(legacySE.Annotations).To(HaveKeyWithValue(labels.LegacyServeExport, labels.True))

		h.update(g, ns, "svc", func(rs *rayv1.RayService) { delete(rs.Annotations, labels.ServeExport) })
		g.Eventually(func(g Gomega) {
			for _, n := range []string{name, legacyName} {
				err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, &corev1.Service{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "export Service %s: %v", n, err)
				err = h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, &mcsv1alpha1.ServiceExport{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceExport %s: %v", n, err)
			}
		}, timeout, interval).Should(Succeed())
		g.Expect(h.exists(ns, "svc-serve-svc", &corev1.Service{})).To(BeTrue(), "the serve Service stays")
	})
}
