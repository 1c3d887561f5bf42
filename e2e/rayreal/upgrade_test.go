//go:build e2e

package rayreal

import (
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

// upgradeDeletionDelay is the RayService's rayClusterDeletionDelaySeconds in the upgrade: short,
// so that the old cluster's deletion falls within the test and its requests.
const upgradeDeletionDelay = 10

// v2 and v3 are what the test app answers at those versions.
const v2, v3 = `{"version":"v2"}`, `{"version":"v3"}`

// requestEvery is how often the upgrade's client asks the serve Service.
const requestEvery = 50 * time.Millisecond

// served is one request to the serve Service: when it was sent, what answered, or why not.
type served struct {
	sent time.Time
	body string
	err  error
}

// serveClient asks url every requestEvery until stopped, keeping every answer.
type serveClient struct {
	mu      sync.Mutex
	answers []served
	stop    chan struct{}
	done    chan struct{}
}

func startServeClient(t *testing.T, env *env, url string) *serveClient {
	c := &serveClient{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		tick := time.NewTicker(requestEvery)
		defer tick.Stop()
		for {
			sent := time.Now()
			body, err := env.get(t.Context(), url)
			c.mu.Lock()
			c.answers = append(c.answers, served{sent: sent, body: body, err: err})
			c.mu.Unlock()
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *serveClient) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// since is every answer to a request sent at or after from.
func (c *serveClient) since(from time.Time) []served {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []served
	for _, a := range c.answers {
		if !a.sent.Before(from) {
			out = append(out, a)
		}
	}
	return out
}

// testUpgrade changes the RayService's cluster (an env var of the head) and its Serve config
// (v3) together, which KubeRay upgrades with zero downtime: a second RayCluster comes up beside
// the first, Serve is deployed on it, the serve Service moves to it, and the first is deleted
// after rayClusterDeletionDelaySeconds. A client asks the serve Service all along, through
// the Node's kube-proxy, a connection per request: no request fails, v3 answers before the old
// cluster is gone (the Service moved), and only v3 once it is.
func testUpgrade(t *testing.T, env *env, rs *rayv1.RayService, url string) {
	g := gomega.NewWithT(t)
	ctx := t.Context()
	c := env.cluster.Client
	var got rayv1.RayService
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rs), &got)).To(gomega.Succeed())
	old := got.Status.ActiveServiceStatus.RayClusterName
	g.Expect(old).NotTo(gomega.BeEmpty(), "active cluster before the upgrade")

	requests := startServeClient(t, env, url)
	g.Eventually(func() bool {
		for _, a := range requests.since(time.Time{}) {
			if a.body == v2 {
				return true
			}
		}
		return false
	}).WithTimeout(time.Minute).Should(gomega.BeTrue(), "v2 answering before the upgrade")

	changed := time.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur rayv1.RayService
		if err := c.Get(ctx, client.ObjectKeyFromObject(rs), &cur); err != nil {
			return err
		}
		cur.Spec.ServeConfigV2 = rayapp.ServeConfig("v3")
		cur.Spec.RayClusterDeletionDelaySeconds = ptr.To(int32(upgradeDeletionDelay))
		head := &cur.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
		head.Env = append(head.Env, corev1.EnvVar{Name: "RAYFLEET_TEST_UPGRADE", Value: "1"})
		return c.Update(ctx, &cur)
	})
	g.Expect(err).NotTo(gomega.HaveOccurred(), "changing the RayService's cluster")

	var active string
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(rs), &got)).To(gomega.Succeed())
		active = got.Status.ActiveServiceStatus.RayClusterName
		g.Expect(active).NotTo(gomega.Equal(old), "active cluster (pending %q)", got.Status.PendingServiceStatus.RayClusterName)
		g.Expect(got.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty())
		app := got.Status.ActiveServiceStatus.Applications["versioned"]
		g.Expect(app.Status).To(gomega.Equal(rayv1.ApplicationStatusEnum.RUNNING), "application on %s: %+v", active, app)
	}).WithTimeout(headTimeout).WithPolling(time.Second).Should(gomega.Succeed())
	switched := time.Since(changed)

	g.Eventually(func(g gomega.Gomega) {
		err := c.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: old}, &rayv1.RayCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "old RayCluster %s: %v", old, err)
		var pods corev1.PodList
		g.Expect(c.List(ctx, &pods, client.InNamespace(rs.Namespace), client.MatchingLabels{"ray.io/cluster": old})).To(gomega.Succeed())
		g.Expect(pods.Items).To(gomega.BeEmpty(), "old cluster's Pods")
	}).WithTimeout(2*time.Minute + upgradeDeletionDelay*time.Second).WithPolling(time.Second).Should(gomega.Succeed())
	gone := time.Now()
	g.Eventually(func() int { return len(requests.since(gone)) }).WithTimeout(time.Minute).
		Should(gomega.BeNumerically(">=", 20), "answers after the old cluster went")
	requests.close()

	all := requests.since(time.Time{})
	var failed []served
	firstV3 := time.Duration(-1)
	for _, a := range all {
		switch {
		case a.err != nil:
			failed = append(failed, a)
		case a.body == v3 && firstV3 < 0:
			firstV3 = a.sent.Sub(changed)
		}
	}
	if firstV3 < 0 || changed.Add(firstV3).After(gone) {
		t.Errorf("v3 first answered %v after the change, not before the old cluster went (%v after it)",
			firstV3.Round(time.Millisecond), gone.Sub(changed).Round(time.Millisecond))
	}
	for _, a := range requests.since(gone) {
		if a.err == nil {
			g.Expect(a.body).To(gomega.Equal(v3), "answer at %s, after the old cluster went", a.sent.Format("15:04:05.000"))
		}
	}
	t.Logf("zero-downtime upgrade: %s -> %s; switched %s after the change, v3 first answered %s after it; %d requests, %d failed",
		old, active, switched.Round(time.Second), firstV3.Round(time.Millisecond), len(all), len(failed))
	for i, a := range failed {
		if i == 10 {
			break
		}
		t.Errorf("request sent at %s failed: %v", a.sent.Format("15:04:05.000"), a.err)
	}
}
