package membership

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/eventrecorder"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// testResync makes the reconciler notice fake-clock steps quickly.
	testResync = 200 * time.Millisecond
)

// TestMembership runs the hub's manager with the kubeconfig provider against a hub and two
// member API servers: both members turn Ready, a member whose heartbeat stops turns
// AgentReady=False, the same member reporting again is readmitted once with its firstReadyTime
// unchanged, and a member whose Secret is deleted turns Joined=False.
func TestMembership(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	envs := envtest.StartN(t, 3, envtest.WithCRDDirectories("charts/rayfleet-hub/crds", "charts/rayfleet-spoke/crds"))
	hub, members := envs[0], map[string]*envtest.Env{"m1": envs[1], "m2": envs[2]}
	ns := labels.DefaultHubNamespace
	g.Expect(hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	clock := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	provider := NewProvider(ProviderOptions{Namespace: ns,
		ClusterOptions: []cluster.Option{func(o *cluster.Options) { o.Scheme = hub.Scheme }}})
	mgr, err := mcmanager.New(hub.Config, provider, mcmanager.Options{Scheme: hub.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The package's tests each run the same controllers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(ctx)
	g.Expect(provider.SetupWithManager(mgrCtx, mgr)).To(Succeed())
	reg := prometheus.NewRegistry()
	recorder := eventrecorder.New(t, hub.Scheme)
	r, err := New(mgr.GetLocalManager().GetClient(), mgr, recorder, Options{
		HubNamespace: ns, ResyncInterval: testResync, Clock: clock, Registerer: reg})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.SetupWithManager(mgr.GetLocalManager())).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mgrCtx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	// writeReportAt writes a report as a spoke whose clock is off by skew would.
	writeReportAt := func(g Gomega, name string, skew time.Duration) {
		c := members[name].Client
		report := &fleetv1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: fleetv1alpha1.ClusterReportName}}
		if err := c.Get(ctx, client.ObjectKeyFromObject(report), report); err != nil {
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			g.Expect(c.Create(ctx, report)).To(Succeed())
		}
		report.Status = fleetv1alpha1.ClusterReportStatus{
			HeartbeatTime: metav1.NewTime(clock.Now().Add(skew)), AgentVersion: "v9.9.9-test", KubernetesVersion: "v1.36.1",
			Nodes: fleetv1alpha1.NodeCounts{Total: 2, Ready: 2},
		}
		g.Expect(c.Status().Update(ctx, report)).To(Succeed())
	}
	writeReport := func(g Gomega, name string) { writeReportAt(g, name, 0) }
	for name, env := range members {
		g.Expect(hub.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{fleetv1alpha1.KubeconfigSecretLabel: labels.True}},
			Data:       map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: env.KubeConfig},
		})).To(Succeed())
		g.Expect(hub.Client.Create(ctx, &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: name}},
		})).To(Succeed())
		writeReport(g, name)
	}
	condition := func(g Gomega, name, typ string) *metav1.Condition {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(hub.Client.Get(ctx, client.ObjectKey{Name: name}, &mc)).To(Succeed())
		c := meta.FindStatusCondition(mc.Status.Conditions, typ)
		g.Expect(c).NotTo(BeNil(), "%s has no %s condition", name, typ)
		return c
	}
	memberStatus := func(g Gomega, name string) fleetv1alpha1.MemberClusterStatus {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(hub.Client.Get(ctx, client.ObjectKey{Name: name}, &mc)).To(Succeed())
		return mc.Status
	}
	readmittedEvents := func(name string) int {
		n := 0
		for _, e := range recorder.Events() {
			if e.Key.Reason == ReasonReadmitted && e.Key.Regarding.Name == name {
				n++
			}
		}
		return n
	}
	firstReady := map[string]time.Time{}

	t.Run("both members turn Ready with the report mirrored", func(t *testing.T) {
		g := NewWithT(t)
		for name := range members {
			g.Eventually(func(g Gomega) {
				g.Expect(condition(g, name, fleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			}, timeout, interval).Should(Succeed())
			var mc fleetv1alpha1.MemberCluster
			g.Expect(hub.Client.Get(ctx, client.ObjectKey{Name: name}, &mc)).To(Succeed())
			g.Expect(mc.Status.AgentVersion).To(Equal("v9.9.9-test"))
			g.Expect(mc.Status.Nodes).To(Equal(&fleetv1alpha1.NodeCounts{Total: 2, Ready: 2}))
			g.Expect(mc.Status.LastHeartbeatTime.Time).To(BeTemporally("==", clock.Now()))
			g.Expect(testutil.ToFloat64(r.metrics.ready.WithLabelValues(name))).To(Equal(1.0))
			// A first Ready is no readmission.
			g.Expect(mc.Status.FirstReadyTime).NotTo(BeNil())
			ready := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionReady)
			g.Expect(mc.Status.FirstReadyTime.Time).To(BeTemporally("==", ready.LastTransitionTime.Time))
			firstReady[name] = mc.Status.FirstReadyTime.Time
			g.Expect(testutil.ToFloat64(r.metrics.readmissions.WithLabelValues(name))).To(Equal(0.0))
			g.Expect(readmittedEvents(name)).To(Equal(0))
			// envtest's kubeconfig holds a client certificate: no expiry to read or warn of.
			creds := condition(g, name, fleetv1alpha1.ConditionCredentialsValid)
			g.Expect(creds.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(creds.Reason).To(Equal(fleetv1alpha1.ReasonNoTokenExpiry))
			g.Expect(mc.Status.Credentials).To(Equal(&fleetv1alpha1.MemberCredentials{}))
			g.Expect(testutil.CollectAndCount(r.metrics.credExpiry)).To(Equal(0))
		}
		cl, err := NewClients(mgr).Client(ctx, "m1")
		g.Expect(err).NotTo(HaveOccurred())
		var report fleetv1alpha1.ClusterReport
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report)).To(Succeed())
		_, err = NewClients(mgr).Client(ctx, "nope")
		g.Expect(err).To(HaveOccurred())
	})

	t.Run("a member reporting more than its capacity limits is warned of", func(t *testing.T) {
		g := NewWithT(t)
		c := members["m1"].Client
		var report fleetv1alpha1.ClusterReport
		g.Expect(c.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report)).To(Succeed())
		gpus := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("10k")}
		report.Status.Capacity = fleetv1alpha1.ClusterCapacity{Allocatable: gpus, Free: gpus}
		g.Expect(c.Status().Update(ctx, &report)).To(Succeed())
		setLimits := func(limits corev1.ResourceList) {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(hub.Client.Get(ctx, client.ObjectKey{Name: "m1"}, &mc)).To(Succeed())
			// A patch, not an update: the reconciler writes m1 concurrently.
			base := mc.DeepCopy()
			mc.Spec.CapacityLimits = limits
			g.Expect(hub.Client.Patch(ctx, &mc, client.MergeFrom(base))).To(Succeed())
		}
		setLimits(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")})
		g.Eventually(func(g Gomega) {
			cond := condition(g, "m1", fleetv1alpha1.ConditionCapacityBounded)
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(fleetv1alpha1.ReasonCapacityOverLimit))
			g.Expect(cond.Message).To(ContainSubstring("nvidia.com/gpu 10k > 8"))
			// The status keeps what the member reported; placement applies the limit.
			free := memberStatus(g, "m1").Capacity.Free["nvidia.com/gpu"]
			g.Expect(free.Value()).To(Equal(int64(10000)))
		}, timeout, interval).Should(Succeed())
		g.Expect(condition(g, "m1", fleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		warned := false
		for _, e := range recorder.Events() {
			warned = warned || (e.Key.Reason == fleetv1alpha1.ReasonCapacityOverLimit && e.Key.EventType == corev1.EventTypeWarning)
		}
		g.Expect(warned).To(BeTrue(), "no Warning event for CapacityOverLimit")
		setLimits(nil)
		g.Eventually(func(g Gomega) {
			g.Expect(condition(g, "m1", fleetv1alpha1.ConditionCapacityBounded).Reason).To(Equal(fleetv1alpha1.ReasonNoCapacityLimits))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a member whose heartbeat stops turns AgentReady=False", func(t *testing.T) {
		g := NewWithT(t)
		clock.Step(DefaultHeartbeatTimeout + time.Second)
		writeReport(g, "m1") // m1 keeps reporting, m2 does not
		g.Eventually(func(g Gomega) {
			c := condition(g, "m2", fleetv1alpha1.ConditionAgentReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonHeartbeatStale))
			g.Expect(condition(g, "m2", fleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		}, timeout, interval).Should(Succeed())
		g.Expect(testutil.ToFloat64(r.metrics.ready.WithLabelValues("m2"))).To(Equal(0.0))
		g.Expect(testutil.ToFloat64(r.metrics.heartbeatAge.WithLabelValues("m2"))).To(BeNumerically(">", 40))
		// m1 may have been looked at between the clock step and its new report, and turned
		// AgentReady=False for that moment; its report brings it back.
		g.Eventually(func(g Gomega) {
			g.Expect(condition(g, "m1", fleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the member reporting again is readmitted once, its firstReadyTime unchanged", func(t *testing.T) {
		g := NewWithT(t)
		st := memberStatus(g, "m2")
		g.Expect(meta.IsStatusConditionFalse(st.Conditions, fleetv1alpha1.ConditionReady)).To(BeTrue())
		g.Expect(st.FirstReadyTime.Time).To(BeTemporally("==", firstReady["m2"]), "firstReadyTime moved while not Ready")
		// m1's heartbeat stays fresh across this step (20s < the 40s timeout).
		clock.Step(20 * time.Second)
		writeReport(g, "m2")
		g.Eventually(func(g Gomega) {
			g.Expect(condition(g, "m2", fleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(testutil.ToFloat64(r.metrics.readmissions.WithLabelValues("m2"))).To(Equal(1.0))
			g.Expect(readmittedEvents("m2")).To(Equal(1))
		}, timeout, interval).Should(Succeed())
		// Several resyncs later the return is still counted once and firstReadyTime has not moved.
		g.Consistently(func(g Gomega) {
			st := memberStatus(g, "m2")
			g.Expect(meta.IsStatusConditionTrue(st.Conditions, fleetv1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(st.FirstReadyTime.Time).To(BeTemporally("==", firstReady["m2"]))
			g.Expect(testutil.ToFloat64(r.metrics.readmissions.WithLabelValues("m2"))).To(Equal(1.0))
			g.Expect(readmittedEvents("m2")).To(Equal(1))
		}, 5*testResync, interval).Should(Succeed())
		for _, e := range recorder.Events() {
			if e.Key.Reason == ReasonReadmitted {
				g.Expect(e.Key.EventType).To(Equal(corev1.EventTypeNormal))
				g.Expect(e.Key.Regarding.Kind).To(Equal("MemberCluster"))
			}
		}
		g.Expect(testutil.CollectAndCount(reg, "rayfleet_member_readmissions_total")).To(Equal(2), "one series per member")
	})

	t.Run("member clocks five minutes off either way change nothing", func(t *testing.T) {
		g := NewWithT(t)
		ready := func(g Gomega, name string) {
			g.Expect(condition(g, name, fleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "%s Ready", name)
		}
		g.Eventually(func(g Gomega) { ready(g, "m1"); ready(g, "m2") }, timeout, interval).Should(Succeed())
		for range 3 {
			clock.Step(20 * time.Second)
			writeReportAt(g, "m1", 5*time.Minute)
			writeReportAt(g, "m2", -5*time.Minute)
			g.Consistently(func(g Gomega) { ready(g, "m1"); ready(g, "m2") }, 3*testResync, interval).Should(Succeed())
		}
		// m1's spoke stops: its heartbeat, five minutes ahead, goes stale on the hub's clock.
		clock.Step(DefaultHeartbeatTimeout + time.Second)
		writeReportAt(g, "m2", -5*time.Minute)
		g.Eventually(func(g Gomega) {
			c := condition(g, "m1", fleetv1alpha1.ConditionAgentReady)
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonHeartbeatStale))
			ready(g, "m2")
		}, timeout, interval).Should(Succeed())
		g.Expect(testutil.ToFloat64(r.metrics.heartbeatAge.WithLabelValues("m1"))).To(BeNumerically(">", 40))
		writeReport(g, "m1")
		g.Eventually(func(g Gomega) { ready(g, "m1") }, timeout, interval).Should(Succeed())
	})

	t.Run("a member whose Secret is deleted turns Joined=False", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(hub.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := condition(g, "m1", fleetv1alpha1.ConditionJoined)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonKubeconfigSecretNotFound))
			g.Expect(condition(g, "m1", fleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		}, timeout, interval).Should(Succeed())
		g.Eventually(func() error {
			_, err := NewClients(mgr).Client(ctx, "m1")
			return err
		}, timeout, interval).Should(HaveOccurred(), "the provider still engages m1")
	})
}
