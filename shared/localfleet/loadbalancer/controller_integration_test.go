package loadbalancer

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// TestIngressOnAPIServer runs the stand-in against a real API server: the ingress goes through
// the status subresource (a plain update would drop it), and a request through the listener
// names the owning RayService and its revision as the API server holds them.
func TestIngressOnAPIServer(t *testing.T) {
	g := newG(t)
	env := envtest.Start(t)
	c, ctx := env.Client, context.Background()
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})).To(gomega.Succeed())
	rs := &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", Annotations: map[string]string{labels.Revision: "rs-5d8f"}},
		Spec: rayv1.RayServiceSpec{RayClusterSpec: rayv1.RayClusterSpec{HeadGroupSpec: rayv1.HeadGroupSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray"}}}},
		}}},
	}
	g.Expect(c.Create(ctx, rs)).To(gomega.Succeed())
	port := freePort(t)
	svc := serveService("rs-serve-svc", "rs", port)
	svc.OwnerReferences[0].UID = rs.UID
	g.Expect(c.Create(ctx, svc)).To(gomega.Succeed())
	clusterIP := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs-head-svc"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8265}}},
	}
	g.Expect(c.Create(ctx, clusterIP)).To(gomega.Succeed())

	lb, err := Start(ctx, Options{Cluster: "eu", IP: "127.0.0.1", Config: env.Config})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(lb.Stop)

	ingress := func(name string) func() ([]string, error) {
		return func() ([]string, error) {
			got := &corev1.Service{}
			err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, got)
			return ingressIPs(got), err
		}
	}
	g.Eventually(ingress("rs-serve-svc")).Should(gomega.Equal([]string{"127.0.0.1"}))
	g.Eventually(func() (Response, error) { return ask("127.0.0.1", port) }).
		Should(gomega.Equal(Response{Cluster: "eu", Revision: "rs-5d8f", RayService: "ns/rs"}))
	g.Expect(ingress("rs-head-svc")()).To(gomega.BeEmpty(), "a ClusterIP Service gets no ingress")

	g.Expect(c.Delete(ctx, svc)).To(gomega.Succeed())
	g.Eventually(func() error { _, err := ask("127.0.0.1", port); return err }).Should(gomega.HaveOccurred())
}
