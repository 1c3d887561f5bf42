package loadbalancer

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

// get GETs url and returns the status, the ClusterHeader and the body.
func get(url string) (int, string, string, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return 0, "", "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(ClusterHeader), string(body), err
}

func TestBackendForwardsToTheServiceHoldingThePort(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "ray serve at %s", r.URL.Path)
	}))
	t.Cleanup(backend.Close)
	var dialedFor atomic.Value
	dial := func(ctx context.Context, svc *corev1.Service, port int32) (net.Conn, error) {
		dialedFor.Store(fmt.Sprintf("%s/%s:%d", svc.Namespace, svc.Name, port))
		var d net.Dialer
		return d.DialContext(ctx, "tcp", backend.Listener.Addr().String())
	}
	kube := kubefake.NewClientset()
	scheme := metadatafake.NewTestScheme()
	g.Expect(metav1.AddMetaToScheme(scheme)).To(gomega.Succeed())
	c, err := start(ctx, Options{Cluster: "us", IP: "127.0.0.1", Log: &syncBuffer{}, Backend: dial},
		kube, metadatafake.NewSimpleMetadataClient(scheme))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(c.Stop)

	port := freePort(t)
	_, err = kube.CoreV1().Services("ns").Create(ctx, serveService("rs-serve-svc", "rs", port), metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	url := fmt.Sprintf("http://127.0.0.1:%d/-/healthz", port)
	g.Eventually(func(g gomega.Gomega) {
		status, cluster, body, gerr := get(url)
		g.Expect(gerr).NotTo(gomega.HaveOccurred())
		g.Expect(status).To(gomega.Equal(http.StatusOK))
		g.Expect(cluster).To(gomega.Equal("us"))
		g.Expect(body).To(gomega.Equal("ray serve at /-/healthz"))
	}).Should(gomega.Succeed())
	g.Expect(dialedFor.Load()).To(gomega.Equal(fmt.Sprintf("ns/rs-serve-svc:%d", port)))

	c.SetFailing(true)
	status, _, _, err := get(url)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(status).To(gomega.Equal(http.StatusServiceUnavailable))
	c.SetFailing(false)

	// A backend that cannot be reached is a 502, as from a load balancer with no healthy target.
	backend.Close()
	g.Eventually(func() (int, error) { s, _, _, err := get(url); return s, err }).Should(gomega.Equal(http.StatusBadGateway))
}
