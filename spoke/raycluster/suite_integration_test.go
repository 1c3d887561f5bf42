package raycluster

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// Shared timeouts of the integration tests: the reconciler reacts to watch events, so a
// step normally completes in well under a second.
const (
	timeout  = 20 * time.Second
	interval = 50 * time.Millisecond
)

// writeCounter counts the status writes per RayCluster, to hold the reconciler to one write
// per observable change, and keeps the body of each one's first status patch.
type writeCounter struct {
	mu     sync.Mutex
	status map[string]int
	first  map[string][]byte
}

func (w *writeCounter) add(name string, patch []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status[name]++
	if _, ok := w.first[name]; !ok {
		w.first[name] = patch
	}
}

// firstPatch is the body of the first status patch of a RayCluster, nil before it.
func (w *writeCounter) firstPatch(name string) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first[name]
}

func (w *writeCounter) get(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status[name]
}

// harness is one API server with the reconciler running against it.
type harness struct {
	c      client.Client
	clock  *clocktesting.FakeClock
	writes *writeCounter
}

func startHarness(t *testing.T, env map[string]string) *harness {
	t.Helper()
	return startHarnessOn(t, envtest.Start(t), env)
}

// startHarnessOn runs the reconciler against the API server of e, with the options read from
// env and then changed by each of tweaks.
func startHarnessOn(t *testing.T, e *envtest.Env, env map[string]string, tweaks ...func(*Options)) *harness {
	t.Helper()
	h := &harness{
		c:      e.Client,
		clock:  clocktesting.NewFakeClock(time.Now()),
		writes: &writeCounter{status: map[string]int{}, first: map[string][]byte{}},
	}
	if os.Getenv("TEST_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme: e.Scheme,
		// Each test runs its own manager in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:    metricsserver.Options{BindAddress: "0"},
		NewClient: func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, opts)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, interceptor.Funcs{
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
					if sub != "status" {
						return c.SubResource(sub).Patch(ctx, obj, p, o...)
					}
					data, err := p.Data(obj)
					if err != nil {
						return err
					}
					// Counted once stored: a test that sees the count reads what was written.
					if err := c.SubResource(sub).Patch(ctx, obj, p, o...); err != nil {
						return err
					}
					h.writes.add(obj.GetName(), data)
					return nil
				},
			}), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := OptionsFromEnv(func(k string) string { return env[k] })
	opts.Clock = h.clock
	opts.MetricsRegisterer = prometheus.NewRegistry()
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	if err := NewReconciler(mgr, opts).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	envtest.RunManager(t, mgr)
	return h
}

func (h *harness) namespace(t *testing.T, g Gomega, name string) string {
	t.Helper()
	g.Expect(h.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// pods lists the Pods of a cluster, optionally of one node type.
func (h *harness) pods(g Gomega, ns, cluster string, nodeType rayv1.RayNodeType) []corev1.Pod {
	var list corev1.PodList
	sel := client.MatchingLabels{labels.Cluster: cluster}
	if nodeType != "" {
		sel[labels.NodeType] = string(nodeType)
	}
	g.Expect(h.c.List(context.Background(), &list, client.InNamespace(ns), sel)).To(Succeed())
	return list.Items
}

// makeReady plays the kubelet: every Pod of the cluster becomes Running and Ready.
func (h *harness) makeReady(g Gomega, ns, cluster string) {
	for _, p := range h.pods(g, ns, cluster, "") {
		h.makePodReady(g, p)
	}
}

// makePodReady plays the kubelet for one Pod: it becomes Running and Ready.
func (h *harness) makePodReady(g Gomega, p corev1.Pod) {
	if podReady(&p) {
		return
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.1.0.1"
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	g.Expect(h.c.Status().Update(context.Background(), &p)).To(Succeed())
}

func (h *harness) get(g Gomega, ns, name string) *rayv1.RayCluster {
	var rc rayv1.RayCluster
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rc)).To(Succeed())
	return &rc
}

// update changes a RayCluster, retrying on conflicts with the reconciler's writes.
func (h *harness) update(g Gomega, ns, name string, mutate func(*rayv1.RayCluster)) {
	g.Eventually(func() error {
		rc := h.get(g, ns, name)
		mutate(rc)
		return h.c.Update(context.Background(), rc)
	}, timeout, interval).Should(Succeed())
}

func conditionStatus(rc *rayv1.RayCluster, t rayv1.RayClusterConditionType) metav1.ConditionStatus {
	for _, c := range rc.Status.Conditions {
		if c.Type == string(t) {
			return c.Status
		}
	}
	return ""
}
