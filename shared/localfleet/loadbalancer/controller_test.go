package loadbalancer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// syncBuffer is a log sink the controller writes from its goroutines while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fakeEnv is a controller on fake clients.
type fakeEnv struct {
	c    *Controller
	kube *kubefake.Clientset
	meta *metadatafake.FakeMetadataClient
	log  *syncBuffer
}

func startFake(t *testing.T, ip string, rayServices ...*metav1.PartialObjectMetadata) *fakeEnv {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]runtime.Object, len(rayServices))
	for i, rs := range rayServices {
		objs[i] = rs
	}
	e := &fakeEnv{kube: kubefake.NewClientset(), meta: metadatafake.NewSimpleMetadataClient(scheme, objs...), log: &syncBuffer{}}
	c, err := start(context.Background(), Options{Cluster: "us", IP: ip, Log: e.log}, e.kube, e.meta)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	e.c = c
	return e
}

func rayServiceMeta(name, revision string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "ray.io/v1", Kind: "RayService"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{labels.Revision: revision}},
	}
}

// serveService is a LoadBalancer Service on port, owned by the RayService owner unless "".
func serveService(name, owner string, port int32) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "serve", Port: port, Protocol: corev1.ProtocolTCP}},
		},
	}
	if owner != "" {
		svc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayService", Name: owner, UID: types.UID("uid-" + owner)}}
	}
	return svc
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// ask sends one request to ip:port and decodes the answer; an error when nothing answers 200.
func ask(ip string, port int32) (Response, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://%s/any/path?x=1", net.JoinHostPort(ip, fmt.Sprint(port))))
	if err != nil {
		return Response{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return Response{}, fmt.Errorf("status %s", resp.Status)
	}
	var body Response
	err = json.NewDecoder(resp.Body).Decode(&body)
	return body, err
}

// ingress reads a Service's ingress IPs from the fake API.
func (e *fakeEnv) ingress(name string) func() ([]string, error) {
	return func() ([]string, error) {
		svc, err := e.kube.CoreV1().Services("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return ingressIPs(svc), nil
	}
}

// ingressIPs are a Service's ingress IPs (the API server adds ipMode, which is not ours to set).
func ingressIPs(svc *corev1.Service) []string {
	var ips []string
	for _, i := range svc.Status.LoadBalancer.Ingress {
		ips = append(ips, i.IP)
	}
	return ips
}

// newG is gomega with room for a busy two-core machine.
func newG(t *testing.T) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	return g
}

func TestServesTheOwnersRevisionUntilTheServiceIsNoLongerALoadBalancer(t *testing.T) {
	servesTheOwnersRevision(t, "127.0.0.1")
}

// TestServesOnAnE2EServeIP runs where the e2e tests run the fleet: in a network namespace with
// 10.99.0.1 on its loopback interface (see the localfleet package's TrafficOptions). Elsewhere
// the address cannot be bound and the test is skipped.
func TestServesOnAnE2EServeIP(t *testing.T) {
	const ip = "10.99.0.1"
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Skipf("%s is not assigned here; run inside a network namespace that has it", ip)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	servesTheOwnersRevision(t, ip)
}

func servesTheOwnersRevision(t *testing.T, ip string) {
	g := newG(t)
	ctx := context.Background()
	e := startFake(t, ip, rayServiceMeta("rs", "rs-1"))
	port := freePort(t)
	svc, err := e.kube.CoreV1().Services("ns").Create(ctx, serveService("rs-serve-svc", "rs", port), metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	g.Eventually(e.ingress("rs-serve-svc")).Should(gomega.Equal([]string{ip}))
	g.Eventually(func() (Response, error) { return ask(ip, port) }).
		Should(gomega.Equal(Response{Cluster: "us", Revision: "rs-1", RayService: "ns/rs"}))

	// The revision is read at request time: a new one shows without touching the Service.
	g.Expect(e.meta.Tracker().Update(rayServices, rayServiceMeta("rs", "rs-2"), "ns")).To(gomega.Succeed())
	g.Eventually(func() (Response, error) { return ask(ip, port) }).
		Should(gomega.HaveField("Revision", "rs-2"))

	svc, err = e.kube.CoreV1().Services("ns").Get(ctx, svc.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	_, err = e.kube.CoreV1().Services("ns").Update(ctx, svc, metav1.UpdateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(e.ingress("rs-serve-svc")).Should(gomega.BeEmpty())
	g.Eventually(func() error { _, err := ask(ip, port); return err }).Should(gomega.HaveOccurred())
}

func TestASecondServiceOnATakenPortWaitsForTheFirstToGo(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	e := startFake(t, "127.0.0.1", rayServiceMeta("a", "a-1"), rayServiceMeta("b", "b-1"))
	port := freePort(t)
	_, err := e.kube.CoreV1().Services("ns").Create(ctx, serveService("a-serve-svc", "a", port), metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(e.ingress("a-serve-svc")).Should(gomega.Equal([]string{"127.0.0.1"}))

	_, err = e.kube.CoreV1().Services("ns").Create(ctx, serveService("b-serve-svc", "b", port), metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(e.log.String).Should(gomega.ContainSubstring("Service ns/b-serve-svc refused: a port of it is Service ns/a-serve-svc's"))
	g.Expect(e.ingress("b-serve-svc")()).To(gomega.BeEmpty())
	g.Expect(ask("127.0.0.1", port)).To(gomega.HaveField("RayService", "ns/a"))

	g.Expect(e.kube.CoreV1().Services("ns").Delete(ctx, "a-serve-svc", metav1.DeleteOptions{})).To(gomega.Succeed())
	g.Eventually(e.ingress("b-serve-svc")).Should(gomega.Equal([]string{"127.0.0.1"}))
	g.Eventually(func() (Response, error) { return ask("127.0.0.1", port) }).
		Should(gomega.Equal(Response{Cluster: "us", Revision: "b-1", RayService: "ns/b"}))
	g.Expect(strings.Count(e.log.String(), "refused")).To(gomega.Equal(1), e.log.String())
}

func TestAnAddressNotAssignedHereStillBecomesTheIngress(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	// 192.0.2.0/24 is reserved for documentation: never assigned to an interface.
	e := startFake(t, "192.0.2.1")
	for i, name := range []string{"one", "two"} {
		_, err := e.kube.CoreV1().Services("ns").Create(ctx, serveService(name, "", int32(8000+i)), metav1.CreateOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Eventually(e.ingress(name)).Should(gomega.Equal([]string{"192.0.2.1"}))
	}
	g.Expect(strings.Count(e.log.String(), "requests to it will fail")).To(gomega.Equal(1), e.log.String())
}

func TestStopClosesTheListeners(t *testing.T) {
	g := newG(t)
	e := startFake(t, "127.0.0.1")
	port := freePort(t)
	_, err := e.kube.CoreV1().Services("ns").Create(context.Background(), serveService("plain", "", port), metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(func() (Response, error) { return ask("127.0.0.1", port) }).Should(gomega.Equal(Response{Cluster: "us"}))

	e.c.Stop()
	_, err = ask("127.0.0.1", port)
	g.Expect(err).To(gomega.HaveOccurred())
	e.c.Stop() // a second Stop is harmless
}

func TestSetFailingAnswers503UntilHealed(t *testing.T) {
	g := newG(t)
	e := startFake(t, "127.0.0.1")
	port := freePort(t)
	_, err := e.kube.CoreV1().Services("ns").Create(context.Background(), serveService("plain", "", port), metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(func() (Response, error) { return ask("127.0.0.1", port) }).Should(gomega.Equal(Response{Cluster: "us"}))

	e.c.SetFailing(true)
	_, err = ask("127.0.0.1", port)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("503")))
	g.Expect(e.ingress("plain")()).To(gomega.Equal([]string{"127.0.0.1"}), "the ingress stays while the endpoint fails")

	e.c.SetFailing(false)
	g.Expect(ask("127.0.0.1", port)).To(gomega.Equal(Response{Cluster: "us"}))
}

func TestStartRejectsANonAddress(t *testing.T) {
	_, err := start(context.Background(), Options{Cluster: "us", IP: "localhost"}, kubefake.NewClientset(), nil)
	if err == nil || !strings.Contains(err.Error(), "not an IP address") {
		t.Fatalf("error %v, want one saying the IP is not an IP address", err)
	}
}

func TestTCPPorts(t *testing.T) {
	tests := []struct {
		name  string
		ports []corev1.ServicePort
		want  []int32
	}{
		{name: "none"},
		{name: "protocol defaults to TCP", ports: []corev1.ServicePort{{Port: 8000}}, want: []int32{8000}},
		{
			name:  "UDP and SCTP skipped, sorted, duplicates once",
			ports: []corev1.ServicePort{{Port: 9000}, {Port: 53, Protocol: corev1.ProtocolUDP}, {Port: 8000, Protocol: corev1.ProtocolTCP}, {Port: 9000, Protocol: corev1.ProtocolTCP}, {Port: 7, Protocol: corev1.ProtocolSCTP}},
			want:  []int32{8000, 9000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tcpPorts(&corev1.Service{Spec: corev1.ServiceSpec{Ports: tt.ports}})
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("tcpPorts = %v, want %v", got, tt.want)
			}
		})
	}
}
