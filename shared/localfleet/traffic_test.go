//go:build e2e

package localfleet

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/hubpolicy"
)

// e2eServeIP is a serve IP the e2e tests' network namespace puts on its loopback interface.
const e2eServeIP = "10.99.0.1"

// TestTrafficFleet starts a one-member fleet with a traffic path: Traefik has the hub's Gateway
// Accepted and Programmed at 127.0.0.1 and answers on GatewayURL (404: no route yet), its API
// on GatewayAdminURL only, and the
// member's load balancer stand-in gives a LoadBalancer Service its serve IP, which the member's
// hub guard lets the hub ask for. Inside a network
// namespace with e2eServeIP (see TrafficOptions), the member's stand-in uses it and a request
// to the Gateway goes through an HTTPRoute, a selectorless Service and its EndpointSlice on
// the hub to the stand-in, as the hub's routes will.
func TestTrafficFleet(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	serveIP, routable := "127.0.0.1", assignable(e2eServeIP)
	if routable {
		serveIP = e2eServeIP
	}
	t.Logf("serve IP %s; a request through the Gateway to the stand-in checked: %v", serveIP, routable)
	f, err := Start(ctx, Options{
		Members: []MemberSpec{{Name: "us"}},
		Traffic: &TrafficOptions{ServeIPs: map[string]string{"us": serveIP}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			var logs strings.Builder
			f.DumpLogs(&logs, 40)
			t.Log(logs.String())
		}
		f.Stop()
	})

	class := &gwv1.GatewayClass{}
	g.Expect(f.Hub.Client.Get(ctx, client.ObjectKey{Name: GatewayClassName}, class)).To(gomega.Succeed())
	g.Expect(meta.IsStatusConditionTrue(class.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted))).
		To(gomega.BeTrue(), "GatewayClass conditions %v", class.Status.Conditions)
	gw := &gwv1.Gateway{}
	g.Expect(f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: GatewayNamespace, Name: GatewayName}, gw)).To(gomega.Succeed())
	for _, cond := range []gwv1.GatewayConditionType{gwv1.GatewayConditionAccepted, gwv1.GatewayConditionProgrammed} {
		g.Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, string(cond))).To(gomega.BeTrue(), "Gateway %s: %v", cond, gw.Status.Conditions)
	}
	g.Expect(gw.Status.Addresses).To(gomega.ContainElement(gomega.HaveField("Value", "127.0.0.1")))
	g.Expect(f.GatewayURL).To(gomega.HavePrefix("http://127.0.0.1:"))

	resp, err := http.Get(f.GatewayURL + "/nothing-routed-here")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(gomega.Equal(http.StatusNotFound))
	// Traefik's API answers on its own port, and the Gateway's listener does not serve it.
	resp, err = http.Get(f.GatewayAdminURL + "/api/http/services")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(gomega.Equal(http.StatusOK))
	resp, err = http.Get(f.GatewayURL + "/api/http/services")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(gomega.Equal(http.StatusNotFound))

	member := f.Members["us"].Client
	guard := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	g.Expect(member.Get(ctx, client.ObjectKey{Name: hubpolicy.DefaultName + hubpolicy.RayServicesSuffix}, guard)).To(gomega.Succeed())
	g.Expect(guard.Spec.Variables).To(gomega.ContainElement(admissionregistrationv1.Variable{Name: hubpolicy.VarAllowNodePorts, Expression: "true"}),
		"the hub may place RayServices with a LoadBalancer serve Service")
	g.Expect(member.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})).To(gomega.Succeed())
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lb"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 18000}},
		},
	}
	g.Expect(member.Create(ctx, svc)).To(gomega.Succeed())
	g.Eventually(func() ([]corev1.LoadBalancerIngress, error) {
		err := member.Get(ctx, client.ObjectKeyFromObject(svc), svc)
		return svc.Status.LoadBalancer.Ingress, err
	}, time.Minute).Should(gomega.ContainElement(gomega.HaveField("IP", serveIP)))
	if routable {
		routeThroughGateway(ctx, g, f, serveIP, 18000)
	}
	g.Expect(f.Exited()).To(gomega.Succeed())
}

// assignable reports whether ip is assigned here, so that something may listen on it.
func assignable(ip string) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// routeThroughGateway routes / of the hub's Gateway to the member's stand-in at ip:port and
// checks that a request arrives there.
func routeThroughGateway(ctx context.Context, g *gomega.WithT, f *Fleet, ip string, port int32) {
	hub := f.Hub.Client
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})).To(gomega.Succeed())
	g.Expect(hub.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "us"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "serve", Port: 8000}}},
	})).To(gomega.Succeed())
	g.Expect(hub.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "us-1", Labels: map[string]string{discoveryv1.LabelServiceName: "us"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("serve"), Port: ptr.To(port)}},
	})).To(gomega.Succeed())
	g.Expect(hub.Create(ctx, &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "us"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{
				Namespace: ptr.To(gwv1.Namespace(GatewayNamespace)), Name: GatewayName,
			}}},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "us", Port: ptr.To(gwv1.PortNumber(8000))},
			}}}}},
		},
	})).To(gomega.Succeed())
	g.Eventually(func() (string, error) {
		resp, err := http.Get(f.GatewayURL + "/")
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.Status + " " + string(body), err
	}, time.Minute, 200*time.Millisecond).Should(gomega.HavePrefix(`200 OK {"cluster":"us"`))
}
