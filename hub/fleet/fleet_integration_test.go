package fleet

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	clustersprovider "sigs.k8s.io/multicluster-runtime/providers/clusters"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// Shared timeouts: the reconciler resyncs every second in these tests.
const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// settle is long enough for a few resyncs: what has not happened by then will not.
	settle = 3 * time.Second
	ns     = "team"
)

// staticMembers is the Members of the tests: clients of the member API servers by name.
type staticMembers map[string]client.Client

// Client reads RayServices as the hub's member caches keep them, without their spec
// (propagation.TrimCopy), so that the drift check takes the path it takes in the hub.
func (m staticMembers) Client(_ context.Context, name string) (client.Client, error) {
	c, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("member %s is not engaged", name)
	}
	return interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			_, err := propagation.TrimCopy(obj)
			return err
		},
	}), nil
}

// Reader reads the member's API server directly, specs included.
func (m staticMembers) Reader(_ context.Context, name string) (client.Reader, error) {
	if c, ok := m[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("member %s is not engaged", name)
}

// fleetHarness is a hub and two members (eu and us) with the hub reconciler running; the test
// plays the membership code (MemberCluster status) and the spokes (member RayService status).
type fleetHarness struct {
	hub     client.Client
	members staticMembers
	// writes records the reconciler's writes on the members.
	writes *memberWrites
}

func startFleet(t *testing.T) *fleetHarness {
	t.Helper()
	return startFleetOf(t, nil, "eu", "us")
}

// startFleetOf starts a hub and the named members (each in the region of its name), the
// reconciler reading time from clk (nil: the real clock).
func startFleetOf(t *testing.T, clk clock.Clock, names ...string) *fleetHarness {
	t.Helper()
	return startFleetWith(t, fleetOptions{clock: clk, members: names})
}

// fleetOptions say what startFleetWith starts.
type fleetOptions struct {
	// clock is the reconciler's; nil: the real clock.
	clock clock.Clock
	// members are the members' names, each in the region of its name.
	members []string
	// hubUsers are, by member, who the reconciler acts as there, so that it holds only what
	// RBAC gives that user; a member not listed sees the envtest admin.
	hubUsers map[string]rest.ImpersonationConfig
	// probes, when set, probe the serve addresses; it runs in the manager.
	probes *dataplane.Prober
	// hubCalls, when set, counts the requests the hub manager (the reconciler's cache and
	// clients) sends the hub's API server.
	hubCalls *apiCalls
	// serviceImports installs the Multi-Cluster Services API's ServiceImport kind on the hub.
	serviceImports bool
}

// startFleetWith starts a hub and o's members with the hub reconciler running.
func startFleetWith(t *testing.T, o fleetOptions) *fleetHarness {
	t.Helper()
	clk, names := o.clock, o.members
	envs := envtest.StartN(t, 1+len(names), envtest.WithCRDDirectories("charts/rayfleet-hub/crds", "charts/rayfleet-spoke/crds", "e2e/testdata/gateway-api"))
	if os.Getenv("TEST_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	if o.serviceImports {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(mcscrd.ServiceImportCRD, &crd); err != nil {
			t.Fatal(err)
		}
		if _, err := crenvtest.InstallCRDs(envs[0].Config, crenvtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{&crd}}); err != nil {
			t.Fatal(err)
		}
	}
	memberEnvs := map[string]*envtest.Env{}
	h := &fleetHarness{hub: envs[0].Client, members: staticMembers{}, writes: &memberWrites{}}
	for i, name := range names {
		memberEnvs[name] = envs[1+i]
		h.members[name] = envs[1+i].Client
	}
	ctx := context.Background()
	if err := h.hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := h.hub.Create(ctx, grantAll()); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		h.joinMember(t, name, name)
	}
	// The members are engaged as the kubeconfig provider would engage them, so the member-copy
	// watch runs as in the hub; the reconciler's own member clients record their writes.
	provider := clustersprovider.New()
	for name, env := range memberEnvs {
		cl, err := cluster.New(env.Config, func(o *cluster.Options) { o.Scheme = env.Scheme })
		if err != nil {
			t.Fatal(err)
		}
		if err := provider.Add(ctx, multicluster.ClusterName(name), cl); err != nil {
			t.Fatal(err)
		}
	}
	// The hub cache keeps RayServices without their specs, as bin/hub's does.
	specs := NewHubSpecs()
	hubConfig := rest.CopyConfig(envs[0].Config)
	if o.hubCalls != nil {
		hubConfig.Wrap(o.hubCalls.wrap)
	}
	mgr, err := mcmanager.New(hubConfig, provider, ctrl.Options{
		Scheme:     envs[0].Scheme,
		Cache:      cache.Options{ByObject: map[client.Object]cache.ByObject{&rayv1.RayService{}: {Transform: specs.Transform(nil)}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:    metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	members := h.writes.recording(t, memberEnvs, o.hubUsers)
	// The tests step a fake clock past soaks and deadlines, whose real-time timers would not
	// fire: every RayService resyncs every second instead, as one waiting on something unwatched
	// does (TestRequeueAfterSettled covers the choice).
	informers := traffic.NewInformers(func(_ context.Context, cluster string) (*rest.Config, error) {
		if cluster == "" {
			return hubConfig, nil
		}
		if env, ok := memberEnvs[cluster]; ok {
			return env.Config, nil
		}
		return nil, fmt.Errorf("member %s is not engaged", cluster)
	}, envs[0].Scheme, labels.DefaultHubName)
	if err := mgr.GetLocalManager().Add(informers); err != nil {
		t.Fatal(err)
	}
	r := NewReconciler(mgr.GetLocalManager(), members, Options{Resync: time.Second, SettledResync: time.Second, Clock: clk,
		MetricsRegisterer: prometheus.NewRegistry(), Specs: specs, Probes: o.probes, TrafficInformers: informers})
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if o.probes != nil {
		if err := mgr.GetLocalManager().Add(o.probes); err != nil {
			t.Fatal(err)
		}
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// joinMember creates a Ready MemberCluster with room for any test RayService.
func (h *fleetHarness) joinMember(t *testing.T, name, region string) {
	t.Helper()
	ctx := context.Background()
	mc := &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": region}},
		Spec:       fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: name}},
	}
	if err := h.hub.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
		Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonMemberReady,
	})
	free := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100"), corev1.ResourceMemory: resource.MustParse("1Ti")}
	mc.Status.Capacity = &fleetv1alpha1.ClusterCapacity{Allocatable: free, Free: free}
	if err := h.hub.Status().Update(ctx, mc); err != nil {
		t.Fatal(err)
	}
}

func (h *fleetHarness) createPolicy(g Gomega, name string, spec fleetv1alpha1.PlacementPolicySpec) {
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	g.Expect(h.hub.Create(context.Background(), pp)).To(Succeed())
}

func (h *fleetHarness) createRayService(g Gomega, name, policy string) {
	rs := raybuilder.MakeRayService(name, ns).Annotation(labels.PlacementPolicy, policy).Obj()
	rs.UID, rs.Generation = "", 0
	g.Expect(h.hub.Create(context.Background(), rs)).To(Succeed())
}

// memberCopy returns the member's RayService name, nil when it has none.
func (h *fleetHarness) memberCopy(g Gomega, cluster, name string) *rayv1.RayService {
	var rs rayv1.RayService
	err := h.members[cluster].Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &rs)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return &rs
}

func (h *fleetHarness) hubRayService(g Gomega, name string) *rayv1.RayService {
	var rs rayv1.RayService
	g.Expect(h.hub.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &rs)).To(Succeed())
	return &rs
}

func (h *fleetHarness) binding(g Gomega, name string) *fleetv1alpha1.RayServiceBinding {
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(h.hub.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &b)).To(Succeed())
	return &b
}

// setMemberReady writes the member copy's status as its spoke would: current generation, Ready.
// The write is retried, as the hub may apply the copy in between.
func (h *fleetHarness) setMemberReady(g Gomega, cluster, name string) {
	g.Eventually(func(g Gomega) { h.writeMemberReady(g, cluster, name) }, timeout, interval).Should(Succeed())
}

func (h *fleetHarness) writeMemberReady(g Gomega, cluster, name string) {
	rs := h.memberCopy(g, cluster, name)
	g.Expect(rs).NotTo(BeNil())
	rs.Status.ObservedGeneration = rs.Generation
	now := metav1.Now()
	rs.Status.LastUpdateTime = &now
	rs.Status.ServiceStatus = rayv1.Running
	rs.Status.NumServeEndpoints = 1
	rs.Status.ActiveServiceStatus.RayClusterName = name + "-abcde"
	meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{
		Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: string(rayv1.RayServiceInitializing),
	})
	g.Expect(h.members[cluster].Status().Update(context.Background(), rs)).To(Succeed())
}

func hubReady(rs *rayv1.RayService) bool {
	return meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))
}

func TestFleetReconciler(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	h.createPolicy(g, "eu-only", fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
	})
	h.createPolicy(g, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2)})

	t.Run("a selector for region=eu places on the eu member only", func(t *testing.T) {
		g := NewWithT(t)
		h.createRayService(g, "sel", "eu-only")
		g.Eventually(func(g Gomega) {
			rs := h.memberCopy(g, "eu", "sel")
			g.Expect(rs).NotTo(BeNil())
			g.Expect(rs.Labels).To(HaveKeyWithValue(labels.OriginName, "sel"))
			g.Expect(h.binding(g, "sel").Spec.Clusters).To(Equal([]string{"eu"}))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) { g.Expect(h.memberCopy(g, "us", "sel")).To(BeNil()) }, settle, interval).Should(Succeed())
		b := h.binding(g, "sel")
		g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1alpha1.ConditionPropagated)).To(BeTrue())
		g.Expect(metav1.IsControlledBy(b, h.hubRayService(g, "sel"))).To(BeTrue())
	})

	t.Run("a RayService that leaves rayStartParams out reaches its member", func(t *testing.T) {
		g := NewWithT(t)
		// The field is optional; left out, it must not reach the member as null, which its CRD refuses.
		rs := raybuilder.MakeRayService("noparams", ns).Annotation(labels.PlacementPolicy, "eu-only").Obj()
		rs.UID, rs.Generation = "", 0
		rs.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = nil
		rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].RayStartParams = nil
		g.Expect(h.hub.Create(context.Background(), rs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(h.memberCopy(g, "eu", "noparams")).NotTo(BeNil())
			g.Expect(h.binding(g, "noparams").Status.Refusals).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
	})

	t.Run("clusters: 2 lands on both, Ready only when both are", func(t *testing.T) {
		g := NewWithT(t)
		h.createRayService(g, "two", "both")
		g.Eventually(func(g Gomega) {
			g.Expect(h.memberCopy(g, "eu", "two")).NotTo(BeNil())
			g.Expect(h.memberCopy(g, "us", "two")).NotTo(BeNil())
		}, timeout, interval).Should(Succeed())
		h.setMemberReady(g, "eu", "two")
		g.Eventually(func(g Gomega) {
			b := h.binding(g, "two")
			g.Expect(b.Status.Clusters).To(HaveLen(2))
			g.Expect(b.Status.Clusters[0].ActiveRayCluster).To(Equal("two-abcde"))
			ready := meta.FindStatusCondition(h.hubRayService(g, "two").Status.Conditions, string(rayv1.RayServiceReady))
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Message).To(HavePrefix("1/2 clusters ready"))
		}, timeout, interval).Should(Succeed())
		g.Expect(hubReady(h.hubRayService(g, "two"))).To(BeFalse())
		h.setMemberReady(g, "us", "two")
		g.Eventually(func(g Gomega) {
			rs := h.hubRayService(g, "two")
			g.Expect(hubReady(rs)).To(BeTrue())
			g.Expect(rs.Status.NumServeEndpoints).To(Equal(int32(2)))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a member copy deleted by hand is restored", func(t *testing.T) {
		g := NewWithT(t)
		old := h.memberCopy(g, "us", "two")
		g.Expect(old).NotTo(BeNil())
		g.Expect(h.members["us"].Delete(context.Background(), old)).To(Succeed())
		g.Eventually(func(g Gomega) {
			rs := h.memberCopy(g, "us", "two")
			g.Expect(rs).NotTo(BeNil())
			g.Expect(rs.UID).NotTo(Equal(old.UID))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a member copy's spec edited by hand is reverted, once", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		g.Eventually(func(g Gomega) {
			rs := h.memberCopy(g, "eu", "two")
			g.Expect(rs).NotTo(BeNil())
			raybuilder.SetImage(&rs.Spec.RayClusterSpec, "rayproject/ray:edited")
			g.Expect(h.members["eu"].Update(ctx, rs)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		var restored *rayv1.RayService
		g.Eventually(func(g Gomega) {
			restored = h.memberCopy(g, "eu", "two")
			g.Expect(restored.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image).NotTo(Equal("rayproject/ray:edited"))
		}, timeout, interval).Should(Succeed())
		// The reverted copy is remembered at its new generation: the resyncs that follow
		// compare nothing and apply nothing.
		applies := len(h.writes.naming("two"))
		g.Consistently(func(g Gomega) {
			g.Expect(h.writes.naming("two")).To(HaveLen(applies))
			g.Expect(h.memberCopy(g, "eu", "two").Generation).To(Equal(restored.Generation))
		}, settle, interval).Should(Succeed())
	})

	t.Run("a spec change reaches both members", func(t *testing.T) {
		g := NewWithT(t)
		// Retried: the hub's own writes (status, finalizer) may come in between.
		g.Eventually(func(g Gomega) {
			rs := h.hubRayService(g, "two")
			raybuilder.SetImage(&rs.Spec.RayClusterSpec, "rayproject/ray:2.99.0")
			g.Expect(h.hub.Update(context.Background(), rs)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		g.Eventually(func(g Gomega) {
			for _, cluster := range []string{"eu", "us"} {
				m := h.memberCopy(g, cluster, "two")
				g.Expect(m).NotTo(BeNil())
				g.Expect(m.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image).To(Equal("rayproject/ray:2.99.0"))
			}
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a foreign member RayService is left alone", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		g.Expect(h.members["eu"].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).
			To(Or(Succeed(), WithTransform(apierrors.IsAlreadyExists, BeTrue())))
		foreign := raybuilder.MakeRayService("mine", ns).Image("rayproject/ray:foreign").Obj()
		foreign.UID, foreign.Generation = "", 0
		g.Expect(h.members["eu"].Create(ctx, foreign)).To(Succeed())
		h.createRayService(g, "mine", "eu-only")
		g.Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(h.binding(g, "mine").Status.Conditions, fleetv1alpha1.ConditionPropagated)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonForeignRayService))
		}, timeout, interval).Should(Succeed())
		m := h.memberCopy(g, "eu", "mine")
		g.Expect(m.Labels).NotTo(HaveKey(labels.OriginName))
		g.Expect(m.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image).To(Equal("rayproject/ray:foreign"))
	})

	t.Run("a member's RayService is never reconciled as a hub object", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		// A member-only RayService whose name no hub RayService has: reconciled as a hub object
		// it would get the hub's finalizer (and a binding would be looked for on the hub).
		own := raybuilder.MakeRayService("member-only", ns).Obj()
		own.UID, own.Generation = "", 0
		g.Expect(h.members["us"].Create(ctx, own)).To(Succeed())
		g.Consistently(func(g Gomega) {
			m := h.memberCopy(g, "us", "member-only")
			g.Expect(m.Finalizers).NotTo(ContainElement(labels.MemberCleanupFinalizer))
			var b fleetv1alpha1.RayServiceBindingList
			g.Expect(h.hub.List(ctx, &b, client.InNamespace(ns))).To(Succeed())
			for i := range b.Items {
				g.Expect(b.Items[i].Name).NotTo(Equal("member-only"))
			}
		}, settle, interval).Should(Succeed())
	})

	t.Run("an invalid RayService is never placed", func(t *testing.T) {
		g := NewWithT(t)
		// The CRD schema accepts it; the spoke's validation does not (not a YAML mapping).
		rs := raybuilder.MakeRayService("bad", ns).ServeConfig("[1, 2]").Obj()
		rs.UID, rs.Generation = "", 0
		g.Expect(h.hub.Create(context.Background(), rs)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(h.hubRayService(g, "bad").Status.Conditions, string(rayv1.RayServiceReady))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonValidationFailed))
		}, timeout, interval).Should(Succeed())
		g.Expect(h.binding(g, "bad").Spec.Clusters).To(BeEmpty())
		g.Expect(h.memberCopy(g, "eu", "bad")).To(BeNil())
		g.Expect(h.memberCopy(g, "us", "bad")).To(BeNil())
	})

	t.Run("deleting the hub RayService deletes the member copies", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(h.hub.Delete(context.Background(), h.hubRayService(g, "two"))).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(h.memberCopy(g, "eu", "two")).To(BeNil())
			g.Expect(h.memberCopy(g, "us", "two")).To(BeNil())
			err := h.hub.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "two"}, &rayv1.RayService{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}, timeout, interval).Should(Succeed())
		// The foreign object of another test is still there.
		g.Expect(h.memberCopy(g, "eu", "mine")).NotTo(BeNil())
	})
}

// TestFleetToleratesNotReadyMember checks that a member blipping to not Ready keeps its copy
// for the policy's failover toleration, and only then loses the RayService to another member.
func TestFleetToleratesNotReadyMember(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	ctx := context.Background()
	h.createPolicy(g, "tolerant", fleetv1alpha1.PlacementPolicySpec{
		Failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](4)},
	})
	h.createRayService(g, "blip", "tolerant")
	var first string
	g.Eventually(func(g Gomega) {
		clusters := h.binding(g, "blip").Spec.Clusters
		g.Expect(clusters).To(HaveLen(1))
		first = clusters[0]
		g.Expect(h.memberCopy(g, first, "blip")).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	other := map[string]string{"eu": "us", "us": "eu"}[first]

	g.Eventually(func(g Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(h.hub.Get(ctx, types.NamespacedName{Name: first}, &mc)).To(Succeed())
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
			Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonMemberNotReady,
			Message: "Reachable is False",
		})
		g.Expect(h.hub.Status().Update(ctx, &mc)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	notReadyAt := time.Now()

	// Within the window the placement holds and says why.
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(h.binding(g, "blip").Status.Conditions, fleetv1alpha1.ConditionPlaced)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring(first + ": not ready: Reachable is False since"))
		g.Expect(c.Message).To(ContainSubstring("tolerated until"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(h.binding(g, "blip").Spec.Clusters).To(Equal([]string{first}))
		g.Expect(h.memberCopy(g, first, "blip")).NotTo(BeNil())
		g.Expect(h.memberCopy(g, other, "blip")).To(BeNil())
	}, 2*time.Second, interval).Should(Succeed())

	// After it the RayService fails over.
	g.Eventually(func(g Gomega) {
		g.Expect(h.binding(g, "blip").Spec.Clusters).To(Equal([]string{other}))
		g.Expect(h.memberCopy(g, other, "blip")).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	// LastTransitionTime has second precision, so the window may end up to a second early.
	g.Expect(time.Since(notReadyAt)).To(BeNumerically(">=", 3*time.Second))

	// The lost copy stays while its replacement does not serve and while its member is not
	// Ready (purgeMode Graceful); then it is purged.
	g.Eventually(func(g Gomega) {
		cs := clusterStatusOf(h.binding(g, "blip"), first)
		g.Expect(cs).NotTo(BeNil())
		g.Expect(cs.Leaving).NotTo(BeNil())
		g.Expect(cs.Leaving.Reason).To(Equal(fleetv1alpha1.LeaveFailedOver))
		g.Expect(h.hubEvent(g, "blip", "Warning", "FailedOver", "cluster "+first+" stayed not Ready")).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	h.serve(g, other, "blip")
	g.Consistently(func(g Gomega) {
		g.Expect(h.memberCopy(g, first, "blip")).NotTo(BeNil(), "purged while its member is not Ready")
	}, 2*time.Second, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(h.hub.Get(ctx, types.NamespacedName{Name: first}, &mc)).To(Succeed())
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
			Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonMemberReady,
		})
		g.Expect(h.hub.Status().Update(ctx, &mc)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(h.memberCopy(g, first, "blip")).To(BeNil())
		g.Expect(clusterStatusOf(h.binding(g, "blip"), first)).To(BeNil())
		g.Expect(h.hubEvent(g, "blip", "Normal", "Purged", "from cluster "+first)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
}

// TestFleetMoveMakeBeforeBreak: a selector change moves the RayService to the other member;
// the old copy stays until the new one serves, then goes.
func TestFleetMoveMakeBeforeBreak(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	ctx := context.Background()
	h.createPolicy(g, "where", fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
	})
	h.createRayService(g, "svc", "where")
	h.serve(g, "eu", "svc")

	g.Eventually(func(g Gomega) {
		var pp fleetv1alpha1.PlacementPolicy
		g.Expect(h.hub.Get(ctx, types.NamespacedName{Namespace: ns, Name: "where"}, &pp)).To(Succeed())
		pp.Spec.ClusterSelector.MatchLabels["region"] = "us"
		g.Expect(h.hub.Update(ctx, &pp)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		b := h.binding(g, "svc")
		g.Expect(b.Spec.Clusters).To(Equal([]string{"us"}))
		cs := clusterStatusOf(b, "eu")
		g.Expect(cs).NotTo(BeNil())
		g.Expect(cs.Leaving).NotTo(BeNil())
		g.Expect(cs.Leaving.Reason).To(Equal(fleetv1alpha1.LeaveMoved))
		g.Expect(h.memberCopy(g, "us", "svc")).NotTo(BeNil())
		g.Expect(h.hubEvent(g, "svc", "Normal", "Moving", "leaving cluster eu")).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(h.memberCopy(g, "eu", "svc")).NotTo(BeNil(), "the old copy went before the new one served")
	}, 2*time.Second, interval).Should(Succeed())

	h.serve(g, "us", "svc")
	g.Eventually(func(g Gomega) {
		g.Expect(h.memberCopy(g, "eu", "svc")).To(BeNil())
		g.Expect(clusterStatusOf(h.binding(g, "svc"), "eu")).To(BeNil())
		g.Expect(h.hubEvent(g, "svc", "Normal", "Removed", "from cluster eu")).To(BeTrue())
	}, timeout, interval).Should(Succeed())
}

// clusterStatusOf is the binding's entry for cluster, nil when it has none.
func clusterStatusOf(b *fleetv1alpha1.RayServiceBinding, cluster string) *fleetv1alpha1.ClusterStatus {
	for i := range b.Status.Clusters {
		if b.Status.Clusters[i].Name == cluster {
			return &b.Status.Clusters[i]
		}
	}
	return nil
}
