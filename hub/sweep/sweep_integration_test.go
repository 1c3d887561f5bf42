package sweep

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	clustersprovider "sigs.k8s.io/multicluster-runtime/providers/clusters"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// settle is long enough for a few periodic passes (every second here).
	settle = 3 * time.Second
	ns     = "team"
	hub    = "rayfleet"
)

// sweepHarness is a hub and two members (eu and us) with only the sweep running: the test
// plays the fleet reconciler (hub RayServices, bindings, member copies) and the membership
// code (MemberCluster readiness).
type sweepHarness struct {
	hub client.Client
	// hubConfig is the hub API server's, for tests that build clients of their own.
	hubConfig *rest.Config
	members   map[string]client.Client
	metrics   *prometheus.Registry
	swept     *Reconciler
}

func startSweep(t *testing.T) *sweepHarness {
	t.Helper()
	names := []string{"eu", "us"}
	envs := envtest.StartN(t, 1+len(names), envtest.WithCRDDirectories("charts/rayfleet-hub/crds", "charts/rayfleet-spoke/crds"))
	h := &sweepHarness{hub: envs[0].Client, hubConfig: envs[0].Config, members: map[string]client.Client{}, metrics: prometheus.NewRegistry()}
	ctx := context.Background()
	provider := clustersprovider.New()
	for i, name := range names {
		env := envs[1+i]
		h.members[name] = env.Client
		cl, err := cluster.New(env.Config, func(o *cluster.Options) { o.Scheme = env.Scheme })
		if err != nil {
			t.Fatal(err)
		}
		if err := provider.Add(ctx, multicluster.ClusterName(name), cl); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range append([]client.Client{h.hub}, h.members["eu"], h.members["us"]) {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		mc := &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: name}},
		}
		if err := h.hub.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		h.setReady(NewWithT(t), name, true)
	}
	mgr, err := mcmanager.New(envs[0].Config, provider, ctrl.Options{
		Scheme:     envs[0].Scheme,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:    metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.swept = New(mgr, Options{HubName: hub, Interval: time.Second, MetricsRegisterer: h.metrics})
	if err := h.swept.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	envtest.RunManager(t, mgr)
	return h
}

// setReady writes the MemberCluster's Ready condition as the membership controller would.
func (h *sweepHarness) setReady(g Gomega, name string, ready bool) {
	g.Eventually(func(g Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(h.hub.Get(context.Background(), types.NamespacedName{Name: name}, &mc)).To(Succeed())
		c := metav1.Condition{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonMemberReady}
		if !ready {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, fleetv1alpha1.ReasonMemberNotReady, "Reachable is False"
		}
		meta.SetStatusCondition(&mc.Status.Conditions, c)
		g.Expect(h.hub.Status().Update(context.Background(), &mc)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

// createHub creates a hub RayService and returns it as stored (with its UID).
func (h *sweepHarness) createHub(g Gomega, name string) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, ns).Obj()
	rs.UID, rs.Generation = "", 0
	g.Expect(h.hub.Create(context.Background(), rs)).To(Succeed())
	return rs
}

// createBinding creates name's binding placing it on spec, with status listing status.
func (h *sweepHarness) createBinding(g Gomega, name string, spec []string, status ...string) {
	b := &fleetv1alpha1.RayServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       fleetv1alpha1.RayServiceBindingSpec{Clusters: spec},
	}
	g.Expect(h.hub.Create(context.Background(), b)).To(Succeed())
	if len(status) == 0 {
		return
	}
	for _, c := range status {
		b.Status.Clusters = append(b.Status.Clusters, fleetv1alpha1.ClusterStatus{Name: c})
	}
	g.Expect(h.hub.Status().Update(context.Background(), b)).To(Succeed())
}

// createCopy creates a member RayService with the given origin labels (originHub "" leaves
// the origin-hub label out).
func (h *sweepHarness) createCopy(g Gomega, cluster, name, originHub, originUID string) {
	rs := raybuilder.MakeRayService(name, ns).Obj()
	rs.UID, rs.Generation = "", 0
	rs.Labels = map[string]string{labels.OriginNamespace: ns, labels.OriginName: name, labels.OriginUID: originUID}
	if originHub != "" {
		rs.Labels[labels.OriginHub] = originHub
	}
	g.Expect(h.members[cluster].Create(context.Background(), rs)).To(Succeed())
}

// exists reports whether cluster has the RayService name.
func (h *sweepHarness) exists(g Gomega, cluster, name string) bool {
	err := h.members[cluster].Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &rayv1.RayService{})
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true
}

// sweptEvent reports whether an OrphanSwept event on the MemberCluster names the RayService.
func (h *sweepHarness) sweptEvent(g Gomega, cluster, name string) bool {
	var evs eventsv1.EventList
	g.Expect(h.hub.List(context.Background(), &evs)).To(Succeed())
	return slices.ContainsFunc(evs.Items, func(ev eventsv1.Event) bool {
		return ev.Regarding.Kind == "MemberCluster" && ev.Regarding.Name == cluster && ev.Reason == ReasonOrphanSwept &&
			strings.Contains(ev.Note, ns+"/"+name+" on cluster "+cluster)
	})
}

func TestSweep(t *testing.T) {
	h := startSweep(t)
	g := NewWithT(t)

	// Kept throughout, checked at the end: another hub's copy, one from before hubs named
	// themselves, a placed copy, one whose hub RayService has no binding yet, and the copy of
	// a replaced hub RayService whose new binding places it there (the fleet reconciler's to
	// take over).
	h.createCopy(g, "eu", "foreign-hub", "other-hub", "u-1")
	h.createCopy(g, "eu", "legacy", "", "u-2")
	placed := h.createHub(g, "placed")
	h.createBinding(g, "placed", []string{"eu"}, "eu")
	h.createCopy(g, "eu", "placed", hub, string(placed.UID))
	unbound := h.createHub(g, "unbound")
	h.createCopy(g, "eu", "unbound", hub, string(unbound.UID))
	h.createHub(g, "replaced")
	h.createBinding(g, "replaced", []string{"eu"})
	h.createCopy(g, "eu", "replaced", hub, "an-earlier-uid")

	t.Run("a copy whose hub RayService is gone is swept", func(t *testing.T) {
		g := NewWithT(t)
		h.createCopy(g, "eu", "gone", hub, "u-3")
		g.Eventually(func(g Gomega) {
			g.Expect(h.exists(g, "eu", "gone")).To(BeFalse())
			g.Expect(h.sweptEvent(g, "eu", "gone")).To(BeTrue(), "an OrphanSwept event")
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a copy its binding no longer lists is swept, the listed one kept", func(t *testing.T) {
		g := NewWithT(t)
		moved := h.createHub(g, "moved")
		h.createCopy(g, "eu", "moved", hub, string(moved.UID))
		h.createCopy(g, "us", "moved", hub, string(moved.UID))
		h.createBinding(g, "moved", []string{"us"}, "us")
		g.Eventually(func(g Gomega) {
			g.Expect(h.exists(g, "eu", "moved")).To(BeFalse())
			g.Expect(h.sweptEvent(g, "eu", "moved")).To(BeTrue(), "an OrphanSwept event")
		}, timeout, interval).Should(Succeed())
		g.Expect(h.exists(g, "us", "moved")).To(BeTrue())
	})

	t.Run("nothing is swept on a member that is not Ready", func(t *testing.T) {
		g := NewWithT(t)
		h.setReady(g, "us", false)
		h.createCopy(g, "us", "late", hub, "u-4")
		g.Consistently(func(g Gomega) { g.Expect(h.exists(g, "us", "late")).To(BeTrue()) }, settle, interval).Should(Succeed())
		h.setReady(g, "us", true)
		g.Eventually(func(g Gomega) { g.Expect(h.exists(g, "us", "late")).To(BeFalse()) }, timeout, interval).Should(Succeed())
	})

	t.Run("the cache is judged in place, one held pair for every copy", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		var cp rayv1.RayService
		g.Expect(h.members["eu"].Get(ctx, types.NamespacedName{Namespace: ns, Name: "placed"}, &cp)).To(Succeed())
		var held origins
		g.Eventually(func(g Gomega) {
			v, err := h.swept.judgeCached(ctx, "eu", &cp, &held)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Orphan).To(BeFalse(), "the cache had neither the hub RayService nor its binding: %s", v.Reason)
		}, timeout, interval).Should(Succeed())
		g.Expect(held.hub.Name).To(Equal("placed"), "the hub RayService was read into held")
		// A copy judged next with the same held pair is judged on its own origin, not on what
		// held kept from the copy before it.
		gone := cp.DeepCopy()
		gone.Labels[labels.OriginName] = "never-created"
		v, err := h.swept.judgeCached(ctx, "eu", gone, &held)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Orphan).To(BeTrue(), "a copy whose hub RayService does not exist: %s", v.Reason)
	})

	t.Run("a candidate of a lagging cache is confirmed by an uncached read and kept", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		fresh := h.createHub(g, "fresh")
		h.createBinding(g, "fresh", []string{"eu"})
		h.createCopy(g, "eu", "fresh", hub, string(fresh.UID))
		// A hub cache that has not seen the RayService nor its binding yet.
		c, err := client.NewWithWatch(h.hubConfig, client.Options{Scheme: h.hub.Scheme()})
		g.Expect(err).NotTo(HaveOccurred())
		lagging := *h.swept
		lagging.hub = interceptor.NewClient(c, interceptor.Funcs{
			Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
				return apierrors.NewNotFound(rayv1.Resource("rayservices"), key.Name)
			},
		})
		var mc fleetv1alpha1.MemberCluster
		g.Expect(h.hub.Get(ctx, types.NamespacedName{Name: "eu"}, &mc)).To(Succeed())
		var cp rayv1.RayService
		g.Expect(h.members["eu"].Get(ctx, types.NamespacedName{Namespace: ns, Name: "fresh"}, &cp)).To(Succeed())
		var held origins
		v, err := lagging.judgeCached(ctx, "eu", &cp, &held)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Orphan).To(BeTrue(), "the lagging cache alone would sweep it")
		g.Expect(lagging.sweepCopy(ctx, &mc, h.members["eu"], &cp, &held)).To(Succeed())
		g.Expect(h.exists(g, "eu", "fresh")).To(BeTrue())
	})

	t.Run("a binding created asks every member known to the cache for a pass", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(h.swept.informers).NotTo(BeNil(), "New reads the MemberClusters' keys from the hub cache")
		names, err := h.swept.memberNames(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(names).To(ConsistOf("eu", "us"))
	})

	t.Run("the others are kept", func(t *testing.T) {
		g := NewWithT(t)
		g.Consistently(func(g Gomega) {
			for _, name := range []string{"foreign-hub", "legacy", "placed", "unbound", "replaced", "fresh"} {
				g.Expect(h.exists(g, "eu", name)).To(BeTrue(), name)
			}
			g.Expect(h.exists(g, "us", "moved")).To(BeTrue())
		}, settle, interval).Should(Succeed())
		g.Expect(testutil.ToFloat64(h.swept.swept.WithLabelValues("eu"))).To(Equal(2.0))
		g.Expect(testutil.ToFloat64(h.swept.swept.WithLabelValues("us"))).To(Equal(1.0))
	})
}
