package rayservice

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/raycluster"
)

// Shared timeouts of the integration tests. A RayService that changes is reconciled every two
// seconds, and the fake clock of these tests stands still unless a test moves it (so a
// submission stays recent, and the RayService keeps that pace): a step takes a few of those at
// most.
const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// settle covers two polls: long enough for a settled RayService to show it writes nothing.
	settle = 5 * time.Second
)

// harness is one API server, the Ray dashboard stand-in, and the RayService reconciler running
// against them (restartable, to play a spoke restart). The test plays the RayCluster
// controller, the kubelet, the EndpointSlice controller and the Gateway controller.
type harness struct {
	// t is the test that owns the harness; managers report to it, whichever subtest
	// (re)started them.
	t      *testing.T
	env    *envtest.Env
	c      client.Client
	clock  *clocktesting.FakeClock
	dash   *raydashboard.Server
	url    string
	writes atomic.Int64
	// rsPatches counts the writes to RayServices themselves (metadata), not their status.
	rsPatches atomic.Int64
	podIP     atomic.Int32

	// driven harnesses run no controller: the test reconciles with reconcile, at the fake
	// clock's time, as often as it likes.
	driven bool

	mu         sync.Mutex
	stop       func()
	reconciler *Reconciler
}

// harnessOption changes how startHarness runs the reconciler.
type harnessOption func(*harness)

// driven makes the test the only source of reconciles (harness.reconcile): no controller, no
// watch, no requeue.
func driven() harnessOption { return func(h *harness) { h.driven = true } }

func startHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	env := envtest.Start(t, envtest.WithCRDDirectories("charts/rayfleet-spoke/crds", "e2e/testdata/gateway-api"))
	h := &harness{t: t, env: env, c: env.Client, clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second))}
	for _, o := range opts {
		o(h)
	}
	h.dash = raydashboard.New(raydashboard.Options{Clock: h.clock})
	var err error
	if h.url, err = h.dash.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.dash.Close() })
	if os.Getenv("TEST_LOGS") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	h.startManager(t)
	t.Cleanup(h.stopManager)
	return h
}

// startManager starts a manager running a new RayService reconciler: a restarted spoke, with
// nothing in memory.
func (h *harness) startManager(t *testing.T) {
	t.Helper()
	mgr, err := ctrl.NewManager(h.env.Config, ctrl.Options{
		Scheme:     h.env.Scheme,
		Cache:      cacheOptions(t),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:    metricsserver.Options{BindAddress: "0"},
		NewClient: func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, opts)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, h.countWrites()), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := dashboard.NewTemplateResolver(raydashboard.DashboardTemplate(h.url), raydashboard.ProxyTemplate(h.url), "")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	factory, err := dashboard.NewFactory(dashboard.FactoryOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	opts := OptionsFromEnv(func(string) string { return "" })
	opts.GatewayAPI = true
	opts.Clock = h.clock
	opts.Resolver = resolver
	opts.Dashboards = factory
	opts.MetricsRegisterer = reg
	r := NewReconciler(mgr, opts)
	if !h.driven {
		if err := r.SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			h.t.Errorf("manager: %v", err)
		}
	}()
	h.mu.Lock()
	h.stop = func() { cancel(); <-done }
	h.reconciler = r
	h.mu.Unlock()
}

// reconcile runs one reconcile of the RayService ns/name, as the controller would, and returns
// its result; for driven harnesses.
func (h *harness) reconcile(g Gomega, ns, name string) ctrl.Result {
	h.mu.Lock()
	r := h.reconciler
	h.mu.Unlock()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}})
	g.Expect(err).NotTo(HaveOccurred())
	return res
}

func (h *harness) stopManager() {
	h.mu.Lock()
	stop := h.stop
	h.stop = nil
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// restart stops the reconciler and starts a new one.
func (h *harness) restart(t *testing.T) {
	h.stopManager()
	h.startManager(t)
}

// cacheOptions restrict the informers as cmd/spoke does, EndpointSlices included: only those
// that name a Service, trimmed (EndpointSliceCache).
func cacheOptions(t *testing.T) cache.Options {
	exists := func(key string) k8slabels.Selector {
		req, err := k8slabels.NewRequirement(key, selection.Exists, nil)
		if err != nil {
			t.Fatal(err)
		}
		return k8slabels.NewSelector().Add(*req)
	}
	slices, err := EndpointSliceCache()
	if err != nil {
		t.Fatal(err)
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:                {Label: exists(labels.Cluster), Transform: raycluster.TrimPod},
			&corev1.Secret{}:             {Label: exists(labels.Cluster)},
			&discoveryv1.EndpointSlice{}: slices,
		},
	}
}

// countWrites counts every write the reconciler makes.
func (h *harness) countWrites() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			h.writes.Add(1)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			h.writes.Add(1)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			h.writes.Add(1)
			if _, ok := obj.(*rayv1.RayService); ok {
				h.rsPatches.Add(1)
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			h.writes.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			h.writes.Add(1)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			h.writes.Add(1)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
}

func (h *harness) namespace(g Gomega, name string) string {
	g.Expect(h.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

func (h *harness) rayService(g Gomega, ns, name string) *rayv1.RayService {
	var rs rayv1.RayService
	g.Expect(h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)).To(Succeed())
	return &rs
}

// update changes a RayService, retrying on conflicts with the reconciler's writes.
func (h *harness) update(g Gomega, ns, name string, mutate func(*rayv1.RayService)) {
	g.Eventually(func() error {
		var rs rayv1.RayService
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return err
		}
		mutate(&rs)
		return h.c.Update(context.Background(), &rs)
	}, timeout, interval).Should(Succeed())
}

func (h *harness) clusters(g Gomega, ns string) []rayv1.RayCluster {
	var list rayv1.RayClusterList
	g.Expect(h.c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

func (h *harness) exists(ns, name string, obj client.Object) bool {
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	return err == nil
}

// waitForPending waits until the RayService names a pending cluster that exists, and returns
// its name.
func (h *harness) waitForPending(g Gomega, ns, name string) string {
	var pending string
	g.Eventually(func(g Gomega) {
		pending = h.rayService(g, ns, name).Status.PendingServiceStatus.RayClusterName
		g.Expect(pending).NotTo(BeEmpty())
		g.Expect(h.exists(ns, pending, &rayv1.RayCluster{})).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	return pending
}

// createPod creates pod and then gives it the status it was built with, which a create drops.
// The controller under test may write the Pod between the two: the update is retried on the Pod
// as it is then.
func (h *harness) createPod(g Gomega, pod *corev1.Pod) {
	ctx := context.Background()
	status := pod.Status
	g.Expect(h.c.Create(ctx, pod)).To(Succeed())
	g.Eventually(func() error {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status = status
		return h.c.Status().Update(ctx, pod)
	}, timeout, interval).Should(Succeed())
}

// bringUp plays the RayCluster controller and the kubelet for cluster: its head Service, a
// running and ready head Pod, and the HeadPodReady condition.
func (h *harness) bringUp(g Gomega, ns, cluster string) {
	ctx := context.Background()
	var rc rayv1.RayCluster
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rc)).To(Succeed())

	svc, err := builder.HeadService(&rc, builder.DefaultOptions())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.c.Create(ctx, svc)).To(Succeed())

	pod := raybuilder.MakePod(cluster+"-head", ns).HeadOf(cluster).Owner(&rc).Ready().Obj()
	pod.Status.PodIP = fmt.Sprintf("10.0.0.%d", h.podIP.Add(1))
	h.createPod(g, pod)

	g.Eventually(func() error {
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rc); err != nil {
			return err
		}
		rc.Status.State = rayv1.Ready
		meta.SetStatusCondition(&rc.Status.Conditions, metav1.Condition{Type: string(rayv1.HeadPodReady),
			Status: metav1.ConditionTrue, Reason: rayv1.HeadPodRunningAndReady})
		return h.c.Status().Update(ctx, &rc)
	}, timeout, interval).Should(Succeed())
}

// syncEndpoints plays the EndpointSlice controller for the Service svc: one slice, with the
// Service's labels, listing the ready Pods its selector selects.
func (h *harness) syncEndpoints(g Gomega, ns, svcName string) {
	ctx := context.Background()
	var svc corev1.Service
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: svcName}, &svc); err != nil {
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "get Service %s: %v", svcName, err)
		return
	}
	var pods corev1.PodList
	g.Expect(h.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(svc.Spec.Selector))).To(Succeed())
	endpoints := []discoveryv1.Endpoint{}
	for _, p := range pods.Items {
		if p.Status.PodIP == "" {
			continue
		}
		endpoints = append(endpoints, discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name, UID: p.UID},
		})
	}
	sliceLabels := maps.Clone(svc.Labels)
	sliceLabels[discoveryv1.LabelServiceName] = svcName
	want := discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svcName + "-slice", Namespace: ns, Labels: sliceLabels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints,
	}
	var have discoveryv1.EndpointSlice
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(&want), &have); apierrors.IsNotFound(err) {
		g.Expect(h.c.Create(ctx, &want)).To(Succeed())
		return
	}
	have.Labels, have.Endpoints = want.Labels, want.Endpoints
	g.Expect(h.c.Update(ctx, &have)).To(Succeed())
}

// acceptGateway plays the Gateway controller: the RayService's Gateway is Accepted and
// Programmed, its HTTPRoute Accepted with its references resolved.
func (h *harness) acceptGateway(g Gomega, ns, rsName string) {
	ctx := context.Background()
	ok := func(t string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: metav1.Now()}
	}
	var gw gwv1.Gateway
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rsName + "-gateway"}, &gw)).To(Succeed())
	gw.Status.Conditions = []metav1.Condition{ok("Accepted"), ok("Programmed")}
	g.Expect(h.c.Status().Update(ctx, &gw)).To(Succeed())

	var route gwv1.HTTPRoute
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rsName + "-httproute"}, &route)).To(Succeed())
	route.Status.Parents = []gwv1.RouteParentStatus{{
		ParentRef:      gwv1.ParentReference{Name: gwv1.ObjectName(gw.Name), Namespace: ptr.To(gwv1.Namespace(ns))},
		ControllerName: "example.com/gateway",
		Conditions:     []metav1.Condition{ok("Accepted"), ok("ResolvedRefs")},
	}}
	g.Expect(h.c.Status().Update(ctx, &route)).To(Succeed())
}

// events returns the reasons of the events recorded about the RayService name.
func (h *harness) events(g Gomega, ns, name string) []string {
	var list eventsv1.EventList
	g.Expect(h.c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "RayService" && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// eventNote returns the note of the first event about name with reason.
func (h *harness) eventNote(g Gomega, ns, name, reason string) string {
	var list eventsv1.EventList
	g.Expect(h.c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			return e.Note
		}
	}
	return ""
}

func condition(rs *rayv1.RayService, t rayv1.RayServiceConditionType) metav1.Condition {
	if c := meta.FindStatusCondition(rs.Status.Conditions, string(t)); c != nil {
		return *c
	}
	return metav1.Condition{}
}
