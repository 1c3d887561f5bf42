//go:build e2e

// Package rayreal runs the spoke against real Ray on a real Node: a local cluster whose one Node
// is real (kubelet, containerd, runc, CNI and kube-proxy in a network namespace) with the Ray
// image `make ray-image` builds imported, and the spoke running on the host. The head Pod the
// spoke builds runs its own `ray start` command line and becomes Ready through its own probes,
// so every flag, env var, port and probe the spoke writes is the one Ray runs with. The spoke
// reaches the head's dashboard and Serve proxy at their in-cluster addresses through a proxy
// into the Node's namespace (HTTP_PROXY; see localcluster.NodeProxy).
//
//	make build image ray-image && go test -tags e2e ./e2e/rayreal/
//	RAYFLEET_E2E_KEEP=1 go test -tags e2e …   # keep the state dir (logs) afterwards
package rayreal

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	neturl "net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/internal/realnode"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

// headTimeout bounds a head's way from creation to Ready: the image is already imported, but
// `ray start` is a dozen Python processes' imports, 18 s on an idle 2-core machine and minutes
// under load; the readiness probe first runs 10 s after the start.
const headTimeout = 8 * time.Minute

// TestRealRay runs, on one cluster with a real Node, a RayCluster and then a RayService whose
// Ray runs for real; the cluster (and the Ray image's import) is the expensive part, so the
// steps share it, each in a namespace of its own.
func TestRealRay(t *testing.T) {
	env := startEnv(t)
	t.Run("RayClusterHeadReady", func(t *testing.T) { testRayClusterHead(t, env) })
	if t.Failed() {
		return
	}
	t.Run("RayServiceRunning", func(t *testing.T) { testRayService(t, env) })
}

// testRayClusterHead creates a RayCluster whose head runs on the real Node and waits until the
// head Pod is Ready through the spoke's own probes and the RayCluster is ready; the head is
// deleted afterwards, since the Node affords one at a time.
func testRayClusterHead(t *testing.T, env *env) {
	g := gomega.NewWithT(t)
	ctx := t.Context()
	c := env.cluster.Client
	ns := env.namespace(t, "raycluster")
	rc := &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "real", Namespace: ns},
		Spec:       rayapp.ClusterSpec(env.rayImage),
	}
	created := time.Now()
	g.Expect(c.Create(ctx, rc)).To(gomega.Succeed())

	var head corev1.Pod
	g.Eventually(func(g gomega.Gomega) {
		var pods corev1.PodList
		g.Expect(c.List(ctx, &pods, client.InNamespace(ns),
			client.MatchingLabels{"ray.io/cluster": rc.Name, "ray.io/node-type": "head"})).To(gomega.Succeed())
		g.Expect(pods.Items).To(gomega.HaveLen(1))
		head = pods.Items[0]
		g.Expect(head.Status.ContainerStatuses).NotTo(gomega.BeEmpty())
		for _, cs := range head.Status.ContainerStatuses {
			g.Expect(cs.RestartCount).To(gomega.BeZero(), "container %s restarted: %v", cs.Name, cs.LastTerminationState)
		}
		g.Expect(podReady(&head)).To(gomega.BeTrue(), "head Pod %s Ready (phase %s)", head.Name, head.Status.Phase)
	}).WithTimeout(headTimeout).WithPolling(time.Second).Should(gomega.Succeed())
	ready := time.Since(created)
	t.Logf("head Pod %s Ready %s after the RayCluster was created (%s)", head.Name, ready.Round(time.Second), startedToReady(&head))

	g.Eventually(func(g gomega.Gomega) {
		var got rayv1.RayCluster
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rc), &got)).To(gomega.Succeed())
		g.Expect(got.Status.State).To(gomega.Equal(rayv1.Ready))
		g.Expect(got.Status.Head.PodIP).To(gomega.Equal(head.Status.PodIP))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(gomega.Succeed())
	t.Logf("head container memory: %s", realnode.HeadMemory(env.cluster, &head))
	g.Expect(c.Delete(ctx, rc)).To(gomega.Succeed())
	g.Eventually(func() ([]corev1.Pod, error) {
		var pods corev1.PodList
		err := c.List(ctx, &pods, client.InNamespace(ns))
		return pods.Items, err
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(gomega.BeEmpty(), "the head Pod deleted")
}

// testRayService creates a RayService with the test Serve app and waits until Ray reports the
// application RUNNING and the RayService Ready, then asks the app through the serve Service,
// updates the Serve config in place, upgrades the cluster with zero downtime (testUpgrade) and
// deploys an application that fails.
func testRayService(t *testing.T, env *env) {
	g := gomega.NewWithT(t)
	ctx := t.Context()
	c := env.cluster.Client
	ns := env.namespace(t, "rayservice")
	rs := &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Name: "real", Namespace: ns},
		Spec: rayv1.RayServiceSpec{
			ServeConfigV2:  rayapp.ServeConfig("v1"),
			RayClusterSpec: rayapp.ClusterSpec(env.rayImage),
		},
	}
	created := time.Now()
	g.Expect(c.Create(ctx, rs)).To(gomega.Succeed())
	var got rayv1.RayService
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rs), &got)).To(gomega.Succeed())
		app := got.Status.ActiveServiceStatus.Applications["versioned"]
		g.Expect(app.Status).To(gomega.Equal(rayv1.ApplicationStatusEnum.RUNNING), "application: %+v; pending: %+v", app, got.Status.PendingServiceStatus.Applications)
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, string(rayv1.RayServiceReady))).To(gomega.BeTrue(), "conditions %v", got.Status.Conditions)
	}).WithTimeout(headTimeout).WithPolling(2 * time.Second).Should(gomega.Succeed())
	t.Logf("RayService Ready with its application RUNNING %s after creation", time.Since(created).Round(time.Second))
	var heads corev1.PodList
	g.Expect(c.List(ctx, &heads, client.InNamespace(ns), client.MatchingLabels{"ray.io/node-type": "head"})).To(gomega.Succeed())
	for i := range heads.Items {
		t.Logf("head %s memory: %s", heads.Items[i].Name, realnode.HeadMemory(env.cluster, &heads.Items[i]))
	}

	// The serve Service's ClusterIP, from the Node's namespace: Ray's own proxy answers.
	var svc corev1.Service
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rs.Name + "-serve-svc"}, &svc)).To(gomega.Succeed())
	g.Eventually(func() (string, error) {
		return env.get(ctx, "http://"+svc.Spec.ClusterIP+":8000/")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(gomega.MatchJSON(`{"version":"v1"}`))

	// A Serve-config-only change is submitted to the same cluster: the new version answers.
	active := got.Status.ActiveServiceStatus.RayClusterName
	updated := time.Now()
	updateServeConfig(t, c, rs, rayapp.ServeConfig("v2"))
	g.Eventually(func() (string, error) {
		return env.get(ctx, "http://"+svc.Spec.ClusterIP+":8000/")
	}).WithTimeout(headTimeout).WithPolling(time.Second).Should(gomega.MatchJSON(`{"version":"v2"}`))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rs), &got)).To(gomega.Succeed())
	g.Expect(got.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(active), "updated in place")
	g.Expect(got.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty())
	t.Logf("serve config v1 -> v2 answered in place %s after the update", time.Since(updated).Round(time.Second))

	// A cluster change: a second RayCluster, the Service moved to it, no request lost.
	testUpgrade(t, env, rs, "http://"+svc.Spec.ClusterIP+":8000/")

	// An application raising at import: Ray's DEPLOY_FAILED and its message reach the status.
	updateServeConfig(t, c, rs, rayapp.ServeConfig("v2")+rayapp.BrokenApp)
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rs), &got)).To(gomega.Succeed())
		app := got.Status.ActiveServiceStatus.Applications["broken"]
		g.Expect(app.Status).To(gomega.Equal(rayv1.ApplicationStatusEnum.DEPLOY_FAILED), "applications %+v", got.Status.ActiveServiceStatus.Applications)
		g.Expect(app.Message).To(gomega.ContainSubstring(rayapp.BrokenMessage))
	}).WithTimeout(headTimeout).WithPolling(2 * time.Second).Should(gomega.Succeed())
}

// updateServeConfig sets the RayService's serveConfigV2, retrying on conflicts with the spoke's
// status writes.
func updateServeConfig(t *testing.T, c client.Client, rs *rayv1.RayService, config string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur rayv1.RayService
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rs), &cur); err != nil {
			return err
		}
		cur.Spec.ServeConfigV2 = config
		return c.Update(t.Context(), &cur)
	})
	if err != nil {
		t.Fatalf("updating the RayService's serveConfigV2: %v", err)
	}
}

// env is what one test runs on: the cluster with its real Node and the spoke.
type env struct {
	cluster  *localcluster.Cluster
	proxy    *localcluster.NodeProxy
	rayImage string
}

// namespace creates a namespace holding the test Serve apps' ConfigMap.
func (e *env) namespace(t *testing.T, name string) string {
	t.Helper()
	if err := e.cluster.CreateNamespace(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	if err := e.cluster.Client.Create(t.Context(), rayapp.ConfigMap(name)); err != nil {
		t.Fatal(err)
	}
	return name
}

// get GETs url from inside the Node's namespace (through the node proxy) and returns the body
// of a 200.
func (e *env) get(ctx context.Context, url string) (string, error) {
	proxyURL, err := neturl.Parse(e.proxy.URL)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// startEnv starts the cluster with a real Node holding the pause and Ray images, the node proxy
// and the spoke, all stopped when t ends.
func startEnv(t *testing.T) *env {
	t.Helper()
	realnode.SkipUnavailable(t)
	crds, err := localcluster.SpokeCRDDir(localcluster.DefaultBinDir())
	if err != nil {
		t.Fatal(err)
	}
	rayImage := realnode.Ray(t)
	cluster := realnode.Start(t, realnode.Spec{
		Options: localcluster.Options{Name: "rayreal", CRDDirs: []string{crds}},
		Prefix:  netip.MustParsePrefix("10.201.0.1/24"),
		Images:  []realnode.Image{rayImage},
	})[0].Cluster

	proxy, err := cluster.StartNodeProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	kubeconfig, _, err := cluster.UserKubeconfig("rayfleet-spoke")
	if err != nil {
		t.Fatal(err)
	}
	// The default address templates: the head Service's DNS name and the Pod IP, as in a
	// cluster; the proxy takes the spoke's requests there (the API server, on loopback, is
	// never proxied).
	spoke, err := cluster.StartManager(t.Context(), "spoke", filepath.Join(localfleet.DefaultRayFleetBin(), "spoke"), kubeconfig,
		[]string{"--zap-devel"}, []string{"HTTP_PROXY=" + proxy.URL, "NO_PROXY="})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(spoke.Stop)
	return &env{cluster: cluster, proxy: proxy, rayImage: rayImage.Name}
}

// startedToReady says how long the head's container took from its start to the Pod's Ready.
func startedToReady(p *corev1.Pod) string {
	var started, ready time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt.Time
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.LastTransitionTime.Time
		}
	}
	if started.IsZero() || ready.IsZero() {
		return "container start unknown"
	}
	return fmt.Sprintf("container started to Ready: %s", ready.Sub(started).Round(time.Second))
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
