//go:build e2e

package localfleet

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestTrafficFleet starts a one-member fleet with a traffic path: Traefik has the hub's Gateway
// Accepted and Programmed at 127.0.0.1 and answers on GatewayURL (404: no route yet), and the
// member's load balancer stand-in gives a LoadBalancer Service its serve IP.
func TestTrafficFleet(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f, err := Start(ctx, Options{
		Members: []MemberSpec{{Name: "us"}},
		Traffic: &TrafficOptions{ServeIPs: map[string]string{"us": "127.0.0.1"}},
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

	member := f.Members["us"].Client
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
	}, time.Minute).Should(gomega.ContainElement(gomega.HaveField("IP", "127.0.0.1")))
	g.Expect(f.Exited()).To(gomega.Succeed())
}
