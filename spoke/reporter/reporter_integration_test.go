package reporter

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// Shared timeouts: the reporter reads informers, so a change shows in the next report well
// within a second.
const (
	timeout  = 20 * time.Second
	interval = 50 * time.Millisecond
)

const testInterval = 10 * time.Second

// failingReader fails every read, as a reader does when the Ray CRDs are missing.
type failingReader struct{ client.Reader }

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("no matches for kind RayCluster")
}

// TestReporter runs the reporter against a real API server: the first report after start, a
// second one after an interval that drops a removed GPU Node's resources, and a report that
// goes out with AgentReady=False when a read fails.
func TestReporter(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := envtest.Start(t)
	c := e.Client

	createNode(t, g, c, "cpu-node", rl("cpu", "8", "memory", "32Gi", "pods", "110"))
	createNode(t, g, c, "gpu-node", rl("cpu", "16", "memory", "64Gi", "pods", "110", "nvidia.com/gpu", "8"))
	createNode(t, g, c, "down-node", rl("cpu", "4"), notReady)
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})).To(Succeed())
	createPod(g, c, "web", "cpu-node", corev1.PodRunning, rl("cpu", "1", "memory", "2Gi"))
	createPod(g, c, "train", "gpu-node", corev1.PodRunning, rl("cpu", "4", "nvidia.com/gpu", "6"))
	createPod(g, c, "done", "gpu-node", corev1.PodSucceeded, rl("cpu", "8", "nvidia.com/gpu", "2"))
	createPod(g, c, "waiting", "", corev1.PodPending, rl("cpu", "2"))
	g.Expect(c.Create(ctx, raybuilder.MakeRayCluster("rc", "team").Obj())).To(Succeed())
	svc := raybuilder.MakeRayService("svc", "team").Obj()
	g.Expect(c.Create(ctx, svc)).To(Succeed())
	svc.Status.Conditions = []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue,
		Reason: "Ready", LastTransitionTime: metav1.Now()}}
	g.Expect(c.Status().Update(ctx, svc)).To(Succeed())

	// A whole second: the heartbeat is stored with second precision.
	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	r, err := New(mgr, Options{Interval: testInterval, Clock: clock, AgentVersion: "v9.9.9-test"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgr.Add(r)).To(Succeed())
	envtest.RunManager(t, mgr)

	t.Run("first report", func(t *testing.T) {
		g := NewWithT(t)
		var report fleetv1alpha1.ClusterReport
		g.Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report)).To(Succeed())
			g.Expect(report.Status.HeartbeatTime.Time).To(BeTemporally("==", clock.Now()))
		}, timeout, interval).Should(Succeed())
		s := report.Status
		g.Expect(s.AgentVersion).To(Equal("v9.9.9-test"))
		g.Expect(s.KubernetesVersion).To(HavePrefix("v1."))
		g.Expect(s.Nodes).To(Equal(fleetv1alpha1.NodeCounts{Total: 3, Ready: 2}))
		g.Expect(s.Workloads).To(Equal(fleetv1alpha1.WorkloadCounts{RayClusters: 1, RayServices: 1, RayServicesReady: 1}))
		expectList(g, s.Capacity.Allocatable, rl("cpu", "24", "memory", "96Gi", "pods", "220", "nvidia.com/gpu", "8"))
		expectList(g, s.Capacity.Free, rl("cpu", "19", "memory", "94Gi", "pods", "218", "nvidia.com/gpu", "2"))
		ready := meta.FindStatusCondition(s.Conditions, fleetv1alpha1.ConditionAgentReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(ready.Reason).To(Equal(fleetv1alpha1.ReasonAgentRunning))
	})

	t.Run("the reporter's cache holds trimmed running Pods only", func(t *testing.T) {
		g := NewWithT(t)
		var pods corev1.PodList
		g.Expect(r.cache.List(ctx, &pods)).To(Succeed())
		names := make([]string, 0, len(pods.Items))
		for _, p := range pods.Items {
			names = append(names, p.Name)
			g.Expect(p.Spec.Containers).To(HaveLen(1))
			g.Expect(p.Spec.Containers[0].Image).To(BeEmpty(), "Pod %s is not trimmed", p.Name)
		}
		g.Expect(names).To(ConsistOf("web", "train"))
		var nodes corev1.NodeList
		g.Expect(r.cache.List(ctx, &nodes)).To(Succeed())
		g.Expect(nodes.Items).To(HaveLen(3))
		g.Expect(nodes.Items[0].Status.Capacity).To(BeNil(), "Nodes are not trimmed")
	})

	t.Run("next report after an interval drops a removed resource", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node"}})).To(Succeed())
		start := clock.Now()
		var report fleetv1alpha1.ClusterReport
		g.Eventually(func(g Gomega) {
			// Step only while the reporter waits, so each step is one interval; the informer
			// may see the deletion a tick late, so keep stepping until the report shows it.
			if clock.HasWaiters() {
				clock.Step(testInterval)
			}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report)).To(Succeed())
			g.Expect(report.Status.Capacity.Allocatable).NotTo(HaveKey(corev1.ResourceName("nvidia.com/gpu")))
		}, timeout, interval).Should(Succeed())
		s := report.Status
		g.Expect(s.HeartbeatTime.Time).To(BeTemporally(">", start))
		g.Expect(s.Capacity.Free).NotTo(HaveKey(corev1.ResourceName("nvidia.com/gpu")))
		g.Expect(s.Nodes).To(Equal(fleetv1alpha1.NodeCounts{Total: 2, Ready: 1}))
		expectList(g, s.Capacity.Allocatable, rl("cpu", "8", "memory", "32Gi", "pods", "110"))
		expectList(g, s.Capacity.Free, rl("cpu", "7", "memory", "30Gi", "pods", "109"))
	})

	t.Run("a failed read still sends the heartbeat, with AgentReady=False", func(t *testing.T) {
		g := NewWithT(t)
		// The running reporter must be between ticks, or its next write would race this one.
		g.Eventually(clock.HasWaiters, timeout, interval).Should(BeTrue())
		failClock := clocktesting.NewFakeClock(clock.Now().Add(time.Hour))
		broken, err := New(mgr, Options{Clock: failClock, AgentVersion: "v9.9.9-test", Cache: mgr.GetCache(), RayReader: failingReader{}})
		g.Expect(err).NotTo(HaveOccurred())
		err = broken.Report(ctx)
		g.Expect(err).To(MatchError(ContainSubstring("listing RayClusters: no matches for kind RayCluster")))

		var report fleetv1alpha1.ClusterReport
		g.Expect(c.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report)).To(Succeed())
		s := report.Status
		g.Expect(s.HeartbeatTime.Time).To(BeTemporally("==", failClock.Now()))
		ready := meta.FindStatusCondition(s.Conditions, fleetv1alpha1.ConditionAgentReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(fleetv1alpha1.ReasonAgentNotReady))
		g.Expect(ready.Message).To(ContainSubstring("listing RayClusters"))
		// The counts could not be read and keep their last value; the capacity was read.
		g.Expect(s.Workloads).To(Equal(fleetv1alpha1.WorkloadCounts{RayClusters: 1, RayServices: 1, RayServicesReady: 1}))
		expectList(g, s.Capacity.Allocatable, rl("cpu", "8", "memory", "32Gi", "pods", "110"))
	})
}

// createNode creates a Node with the given allocatable resources, Ready unless opts say
// otherwise. The test plays the kubelet (status) and the node lifecycle controller: the API
// server's TaintNodesByCondition admission taints every new Node not-ready, and that
// controller removes the taint once the Node is Ready.
func createNode(t *testing.T, g Gomega, c client.Client, name string, alloc corev1.ResourceList, opts ...nodeOpt) {
	t.Helper()
	ctx := context.Background()
	n := makeNode(name, alloc, opts...)
	status := n.Status
	g.Expect(c.Create(ctx, &n)).To(Succeed())
	g.Expect(n.Spec.Taints).To(ContainElement(HaveField("Key", corev1.TaintNodeNotReady)))
	if NodeReady(&corev1.Node{Status: status}) {
		n.Spec.Taints = nil
		g.Expect(c.Update(ctx, &n)).To(Succeed())
	}
	n.Status = status
	n.Status.Capacity = alloc
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].LastHeartbeatTime = metav1.Now()
		n.Status.Conditions[i].LastTransitionTime = metav1.Now()
	}
	g.Expect(c.Status().Update(ctx, &n)).To(Succeed())
}

// createPod creates a Pod bound to node (none when empty) in the given phase.
func createPod(g Gomega, c client.Client, name, node string, ph corev1.PodPhase, req corev1.ResourceList) {
	ctx := context.Background()
	p := raybuilder.MakePod(name, "team").Obj()
	p.Spec.NodeName = node
	// Extended resources (GPUs) need a limit equal to the request.
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req, Limits: req.DeepCopy()}
	g.Expect(c.Create(ctx, p)).To(Succeed())
	p.Status.Phase = ph
	g.Expect(c.Status().Update(ctx, p)).To(Succeed())
}

// expectList compares resource lists by value ("1" equals "1000m").
func expectList(g Gomega, got, want corev1.ResourceList) {
	g.Expect(got).To(HaveLen(len(want)), "got %v, want %v", got, want)
	for name, q := range want {
		v, ok := got[name]
		g.Expect(ok).To(BeTrue(), "missing %s in %v", name, got)
		g.Expect(v.Cmp(q)).To(Equal(0), "%s: got %s, want %s", name, v.String(), q.String())
	}
}

// TestReporterFirstReportWithZeroCounts covers a first report whose counts are partly zero (a
// RayService not Ready yet): every count must reach the API server, which requires them all.
func TestReporterFirstReportWithZeroCounts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := envtest.Start(t)
	c := e.Client
	createNode(t, g, c, "cpu-node", rl("cpu", "8", "memory", "32Gi", "pods", "110"))
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})).To(Succeed())
	g.Expect(c.Create(ctx, raybuilder.MakeRayService("svc", "team").Obj())).To(Succeed())

	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	r, err := New(mgr, Options{Interval: testInterval, Clock: clocktesting.NewFakeClock(time.Now())})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgr.Add(r)).To(Succeed())
	envtest.RunManager(t, mgr)

	g.Eventually(func(g Gomega) {
		var report fleetv1alpha1.ClusterReport
		g.Expect(c.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report)).To(Succeed())
		g.Expect(report.Status.Workloads).To(Equal(fleetv1alpha1.WorkloadCounts{RayServices: 1}))
		g.Expect(report.Status.Nodes).To(Equal(fleetv1alpha1.NodeCounts{Total: 1, Ready: 1}))
	}, timeout, interval).Should(Succeed())
}
