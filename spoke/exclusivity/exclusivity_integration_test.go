package exclusivity_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/exclusivity"
	"github.com/rayfleet/rayfleet/spoke/raycluster"
	"github.com/rayfleet/rayfleet/spoke/rayservice"
	"github.com/rayfleet/rayfleet/spoke/reporter"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// settle is how long a refused spoke is watched for writes: several rechecks and
	// reconciles.
	settle = 3 * time.Second
	// recheck is how soon a refused object is looked at again in these tests.
	recheck = 200 * time.Millisecond
)

// spoke is one spoke's gate and claimer; the test runs the claimer's rounds itself (Sync) on a
// fake clock, or starts it (Start) to see it release its claim when it stops.
type spoke struct {
	gate    *exclusivity.Gate
	claimer *exclusivity.Claimer
}

func newSpoke(t *testing.T, c client.Client, clk *clocktesting.FakeClock, namespace string) *spoke {
	t.Helper()
	gate := exclusivity.NewGate(clk, recheck)
	claimer, err := exclusivity.NewClaimer(exclusivity.ClaimerOptions{
		Identity: exclusivity.Identity{Namespace: namespace, Name: "rayfleet-spoke.rayfleet.io"},
		Client:   c, Reader: c, Gate: gate, Clock: clk, Interval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &spoke{gate: gate, claimer: claimer}
}

// startReconcilers runs the RayCluster and RayService reconcilers and the reporter, all behind
// s's gate, as cmd/spoke wires them.
func startReconcilers(t *testing.T, e *envtest.Env, s *spoke) {
	t.Helper()
	if os.Getenv("TEST_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:     e.Scheme,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:    metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	rc := raycluster.OptionsFromEnv(func(string) string { return "" })
	rc.MetricsRegisterer, rc.Gate = reg, s.gate
	if err = raycluster.NewReconciler(mgr, rc).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	rs := rayservice.OptionsFromEnv(func(string) string { return "" })
	rs.MetricsRegisterer, rs.Gate = reg, s.gate
	if err = rayservice.NewReconciler(mgr, rs).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	rep, err := reporter.New(mgr, reporter.Options{Interval: 500 * time.Millisecond, Exclusivity: s.claimer.Problem})
	if err != nil {
		t.Fatal(err)
	}
	if err = mgr.Add(rep); err != nil {
		t.Fatal(err)
	}
	envtest.RunManager(t, mgr)
}

func createNamespaces(g Gomega, c client.Client, names ...string) {
	for _, n := range names {
		g.Expect(c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
	}
}

// kubeRayLease plays KubeRay's operator: its leader-election Lease, renewed now.
func kubeRayLease(g Gomega, c client.Client, clk *clocktesting.FakeClock) {
	now := metav1.NewMicroTime(clk.Now())
	g.Expect(c.Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ray-system", Name: exclusivity.KubeRayLeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kuberay-operator-5f7b9_1c2d"),
			LeaseDurationSeconds: ptr.To(int32(15)), AcquireTime: &now, RenewTime: &now},
	})).To(Succeed())
}

// conflictCondition returns obj's controller-conflict condition, nil when it has none.
func conflictCondition(g Gomega, c client.Client, obj client.Object) *metav1.Condition {
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		return meta.FindStatusCondition(o.Status.Conditions, exclusivity.ConditionControllerConflict)
	case *rayv1.RayService:
		return meta.FindStatusCondition(o.Status.Conditions, exclusivity.ConditionControllerConflict)
	}
	return nil
}

// eventReasons lists the reasons of the events about the named object by type, a reason as
// many times as it was recorded (the events API counts repeats in a series).
func eventReasons(g Gomega, c client.Client, ns, kind, name string) map[string][]string {
	var list eventsv1.EventList
	g.Expect(c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.Regarding.Kind != kind || e.Regarding.Name != name {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		for range n {
			out[e.Type] = append(out[e.Type], e.Reason)
		}
	}
	return out
}

// created counts what a spoke creates in ns: Pods, Services and RayClusters of RayServices.
func created(g Gomega, c client.Client, ns string) (pods, services, clusters int) {
	ctx := context.Background()
	var podList corev1.PodList
	g.Expect(c.List(ctx, &podList, client.InNamespace(ns))).To(Succeed())
	var svcList corev1.ServiceList
	g.Expect(c.List(ctx, &svcList, client.InNamespace(ns))).To(Succeed())
	var rcList rayv1.RayClusterList
	g.Expect(c.List(ctx, &rcList, client.InNamespace(ns), client.HasLabels{labels.OriginatedFromCRName})).To(Succeed())
	return len(podList.Items), len(svcList.Items), len(rcList.Items)
}

// finalized reports whether the RayService ns/name has a finalizer (the spoke's first write).
func finalized(g Gomega, c client.Client, ns, name string) bool {
	var rs rayv1.RayService
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)).To(Succeed())
	return len(rs.Finalizers) > 0
}

func clusterReport(g Gomega, c client.Client) *metav1.Condition {
	var report fleetv1alpha1.ClusterReport
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report)).To(Succeed())
	cond := meta.FindStatusCondition(report.Status.Conditions, fleetv1alpha1.ConditionAgentReady)
	// A spoke that just took the report over may not have written its condition yet.
	g.Expect(cond).NotTo(BeNil(), "the ClusterReport has no AgentReady condition yet")
	return cond
}

// TestKubeRayOperatorActive plays a member where KubeRay's operator still runs: the spoke
// marks the RayCluster and the RayService it finds, with a Warning event each, creates nothing
// and reports AgentReady=False; once KubeRay's Lease is no longer renewed (the operator scaled
// to zero), it clears the condition, says so, and reconciles.
func TestKubeRayOperatorActive(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := envtest.Start(t)
	c := e.Client
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	createNamespaces(g, c, "ray-system", "rayfleet-system", "team")
	kubeRayLease(g, c, clk)

	s := newSpoke(t, c, clk, "rayfleet-system")
	g.Expect(s.claimer.Sync(ctx)).To(Succeed())
	startReconcilers(t, e, s)

	rc := raybuilder.MakeRayCluster("rc", "team").WorkerGroup("workers", 1, 0, 2).Obj()
	g.Expect(c.Create(ctx, rc)).To(Succeed())
	rs := raybuilder.MakeRayService("svc", "team").Obj()
	g.Expect(c.Create(ctx, rs)).To(Succeed())

	objects := []struct {
		kind string
		obj  client.Object
	}{
		{"RayCluster", &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "rc"}}},
		{"RayService", &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc"}}},
	}
	for _, o := range objects {
		g.Eventually(func(g Gomega) {
			cond := conflictCondition(g, c, o.obj)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Reason).To(Equal(exclusivity.ReasonAnotherOperatorActive))
			g.Expect(cond.Message).To(ContainSubstring("ray-system/ray-operator-leader held by kuberay-operator-5f7b9_1c2d"))
			g.Expect(eventReasons(g, c, "team", o.kind, o.obj.GetName())).To(HaveKeyWithValue(corev1.EventTypeWarning,
				ConsistOf(exclusivity.ReasonAnotherOperatorActive)))
		}, timeout, interval).Should(Succeed(), o.kind)
	}
	g.Eventually(func(g Gomega) {
		cond := clusterReport(g, c)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(fleetv1alpha1.ReasonAnotherOperatorActive))
	}, timeout, interval).Should(Succeed())

	// Refused: nothing is created, no finalizer added, and the condition and event are not
	// written again however often the objects are looked at.
	g.Consistently(func(g Gomega) {
		pods, services, clusters := created(g, c, "team")
		g.Expect([]int{pods, services, clusters}).To(Equal([]int{0, 0, 0}), "Pods, Services, RayClusters created")
		g.Expect(finalized(g, c, "team", "svc")).To(BeFalse())
		for _, o := range objects {
			g.Expect(eventReasons(g, c, "team", o.kind, o.obj.GetName())[corev1.EventTypeWarning]).To(HaveLen(1))
		}
	}, settle, interval).Should(Succeed())

	// KubeRay scaled to zero: its Lease is no longer renewed, and goes stale.
	clk.Step(21 * time.Second)
	g.Expect(s.claimer.Sync(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, o := range objects {
			g.Expect(conflictCondition(g, c, o.obj)).To(BeNil(), o.kind)
			g.Expect(eventReasons(g, c, "team", o.kind, o.obj.GetName())[corev1.EventTypeNormal]).To(
				ContainElement(exclusivity.ReasonReconcileResumed), o.kind)
		}
		pods, services, clusters := created(g, c, "team")
		g.Expect(pods).To(BeNumerically(">", 0), "the RayCluster's Pods")
		g.Expect(services).To(BeNumerically(">", 0), "the head Service")
		g.Expect(clusters).To(Equal(1), "the RayService's RayCluster")
		g.Expect(finalized(g, c, "team", "svc")).To(BeTrue(), "the RayService's finalizer")
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(clusterReport(g, c).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
}

// TestSecondSpoke plays two spoke installations on one member: the one that claimed it first
// keeps it; the second leaves the RayCluster alone, with AnotherSpokeActive, and leaves the
// ClusterReport to the first. When the first stops (releasing its claim), the second takes over.
func TestSecondSpoke(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := envtest.Start(t)
	c := e.Client
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	createNamespaces(g, c, "spoke-a", "spoke-b", "team")

	first := newSpoke(t, c, clk, "spoke-a")
	firstCtx, stopFirst := context.WithCancel(ctx)
	firstDone := make(chan error, 1)
	go func() { firstDone <- first.claimer.Start(firstCtx) }()
	t.Cleanup(func() {
		stopFirst()
		if err := <-firstDone; err != nil {
			t.Errorf("the first spoke's claimer: %v", err)
		}
	})
	g.Eventually(func(g Gomega) {
		_, ok := first.gate.Decision()
		g.Expect(ok).To(BeTrue())
	}, timeout, interval).Should(Succeed())

	clk.Step(time.Second)
	second := newSpoke(t, c, clk, "spoke-b")
	g.Expect(second.claimer.Sync(ctx)).To(Succeed())
	startReconcilers(t, e, second)
	g.Expect(c.Create(ctx, raybuilder.MakeRayCluster("rc", "team").Obj())).To(Succeed())

	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "rc"}}
	g.Eventually(func(g Gomega) {
		cond := conflictCondition(g, c, rc)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(exclusivity.ReasonAnotherSpokeActive))
		g.Expect(cond.Message).To(ContainSubstring("spoke-a/rayfleet-spoke.rayfleet.io"))
		g.Expect(eventReasons(g, c, "team", "RayCluster", "rc")).To(HaveKeyWithValue(corev1.EventTypeWarning,
			ConsistOf(exclusivity.ReasonAnotherSpokeActive)))
	}, timeout, interval).Should(Succeed())
	// The first spoke ranks the second below itself and carries on.
	clk.Step(time.Second)
	g.Eventually(func(g Gomega) {
		d, ok := first.gate.Decision()
		g.Expect(ok).To(BeTrue())
		g.Expect(d.Conflicts).To(BeEmpty())
		g.Expect(d.Outranked).To(HaveLen(1))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		pods, _, _ := created(g, c, "team")
		g.Expect(pods).To(BeZero())
		err := c.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &fleetv1alpha1.ClusterReport{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the second spoke leaves the ClusterReport to the first: %v", err)
	}, settle, interval).Should(Succeed())

	// The first spoke stops and releases its claim: the second takes over at its next round.
	stopFirst()
	g.Expect(<-firstDone).To(Succeed())
	firstDone <- nil
	var claim coordinationv1.Lease
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "spoke-a", Name: exclusivity.ClaimLeaseName}, &claim)).To(Succeed())
	g.Expect(ptr.Deref(claim.Spec.HolderIdentity, "")).To(BeEmpty())
	g.Expect(second.claimer.Sync(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(conflictCondition(g, c, rc)).To(BeNil())
		pods, _, _ := created(g, c, "team")
		g.Expect(pods).To(BeNumerically(">", 0))
		g.Expect(clusterReport(g, c).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
}
