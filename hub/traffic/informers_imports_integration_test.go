package traffic

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

// startInformers starts Informers reaching e through cfg, on a fake clock, until ctx ends.
func startInformers(ctx context.Context, e *trafficEnv, cfg *rest.Config) (*Informers, *clocktesting.FakeClock) {
	inf := NewInformers(func(context.Context, string) (*rest.Config, error) { return cfg, nil }, e.c.Scheme(), demo.HubName)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	inf.clock = clk
	go func() { _ = inf.Start(ctx) }()
	return inf, clk
}

// expectQueued waits until Changes has carried each of want, failing on any other
// RayService.
func expectQueued(t *testing.T, inf *Informers, what string, want ...types.NamespacedName) {
	t.Helper()
	for len(want) > 0 {
		select {
		case ev := <-inf.Changes():
			i := slices.Index(want, ev.Object)
			if i < 0 {
				t.Fatalf("%s queued %v, want %v", what, ev.Object, want)
			}
			want = slices.Delete(want, i, i+1)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not queue %v", what, want)
		}
	}
}

// expectNoneQueued fails when Changes carries anything within a few settles.
func expectNoneQueued(t *testing.T, inf *Informers, what string) {
	t.Helper()
	select {
	case ev := <-inf.Changes():
		t.Errorf("%s queued %v", what, ev.Object)
	case <-time.After(4 * settle):
	}
}

// installServiceImports installs the Multi-Cluster Services API's ServiceImport kind.
func (e *trafficEnv) installServiceImports() {
	e.t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(mcscrd.ServiceImportCRD, &crd); err != nil {
		e.t.Fatal(err)
	}
	if _, err := crenvtest.InstallCRDs(e.cfg, crenvtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{&crd}}); err != nil {
		e.t.Fatal(err)
	}
}

func serviceImport(namespace, name string) *mcsv1alpha1.ServiceImport {
	return &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP,
			Ports: []mcsv1alpha1.ServicePort{{Port: ServePort, Protocol: corev1.ProtocolTCP}}}}
}

// TestInformersQueueImportChanges reads the ServiceImports of demo's namespace through the
// informers: not while the cluster has no such kind (the routes stay watched), then, once it
// has, a ServiceImport appearing or going queues every RayService routed there, and an edit
// of one, which changes no name, nothing.
func TestInformersQueueImportChanges(t *testing.T) {
	e := startTrafficEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inf, clk := startInformers(ctx, e, e.cfg)
	e.apply(demo)
	e.apply(other)
	ns := demoKey.Route.Namespace
	NewWithT(t).Eventually(func() bool {
		drain(inf, 0)
		_, ok := inf.Reader(ctx, "", ns)
		return ok
	}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "the informers synced")
	drain(inf, settle)

	if _, ok := inf.ImportsReader(ctx, "", ns); ok {
		t.Fatal("ImportsReader without the ServiceImport kind is ok")
	}
	if _, ok := inf.Reader(ctx, "", ns); !ok {
		t.Fatal("the routes are not read through the informers once ServiceImports were asked for")
	}

	e.installServiceImports()
	if err := e.c.Create(ctx, serviceImport(ns, "demo-serve-us")); err != nil {
		t.Fatal(err)
	}
	if _, ok := inf.ImportsReader(ctx, "", ns); ok {
		t.Fatal("ImportsReader is ok before deniedRetry passed since the kind was missing")
	}
	clk.Step(deniedRetry)
	var reader client.Reader
	NewWithT(t).Eventually(func() bool {
		var ok bool
		reader, ok = inf.ImportsReader(ctx, "", ns)
		return ok
	}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "the ServiceImports' informer synced")
	if got, err := ObserveImports(ctx, reader, ns); err != nil || !got["demo-serve-us"] || len(got) != 1 {
		t.Fatalf("ObserveImports through the informers = %v, %v; want demo-serve-us", got, err)
	}
	// The initial list queues nothing: the RayServices were polled until then.
	expectNoneQueued(t, inf, "the ServiceImports' initial list")

	current := serviceImport(ns, ImportName(demoKey, "us"))
	if err := e.c.Create(ctx, current); err != nil {
		t.Fatal(err)
	}
	expectQueued(t, inf, "a ServiceImport appearing", demo.RayService, other.RayService)
	NewWithT(t).Eventually(func() (Imports, error) { return ObserveImports(ctx, reader, ns) }).
		Should(HaveKey(current.Name), "the informers show the new ServiceImport")
	drain(inf, settle)

	current.Labels = map[string]string{"example.com/edited": "yes"}
	if err := e.c.Update(ctx, current); err != nil {
		t.Fatal(err)
	}
	expectNoneQueued(t, inf, "a ServiceImport edited")

	// One in another namespace belongs to no route read here.
	if err := e.c.Create(ctx, serviceImport("gw", "elsewhere")); err != nil {
		t.Fatal(err)
	}
	expectNoneQueued(t, inf, "a ServiceImport of another namespace")

	if err := e.c.Delete(ctx, current); err != nil {
		t.Fatal(err)
	}
	expectQueued(t, inf, "a ServiceImport going", demo.RayService, other.RayService)
}

// TestInformersQueueLegacyChanges reads the route an earlier hub wrote for demo in the
// Gateway's namespace through the informers of that namespace, and its going queues demo.
func TestInformersQueueLegacyChanges(t *testing.T) {
	e := startTrafficEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inf, _ := startInformers(ctx, e, e.cfg)
	legacy, _ := LegacyKey(demo.RayService, &demo.Spec)
	if err := Apply(ctx, e.c, e.c, legacyObjects(t, demo)); err != nil {
		t.Fatalf("writing the earlier route: %v", err)
	}
	var cached client.Reader
	NewWithT(t).Eventually(func() bool {
		drain(inf, 0)
		var ok bool
		cached, ok = inf.Reader(ctx, "", legacy.Route.Namespace)
		return ok
	}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "the informers of the Gateway's namespace synced")
	members := []string{"us", "eu", "ap"}
	if st, err := ObserveLegacy(ctx, cached, legacy, demo.HubName, members); err != nil || !st.Exists || st.Matches.Gateway != "edge" {
		t.Fatalf("ObserveLegacy through the informers = %+v, %v; want the earlier route", st, err)
	}
	if st, err := ObserveLegacy(ctx, cached, legacy, "another-hub", members); err != nil || st.Exists {
		t.Fatalf("ObserveLegacy as another hub = %+v, %v; want no route of its own", st, err)
	}
	// Not accepted (demo's new route does not exist): the earlier one stays.
	if remains, err := RetireLegacy(ctx, e.c, e.c, cached, legacy, demo.HubName, State{}); err != nil || !remains {
		t.Fatalf("RetireLegacy = %v, %v; want the earlier route kept", remains, err)
	}
	drain(inf, settle)

	if err := e.c.Delete(ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: legacy.Route.Namespace, Name: legacy.Route.Name}}); err != nil {
		t.Fatal(err)
	}
	expectQueued(t, inf, "the earlier route deleted by hand", demo.RayService)
	NewWithT(t).Eventually(func() (bool, error) {
		st, err := ObserveLegacy(ctx, cached, legacy, demo.HubName, members)
		return st.Exists, err
	}).Should(BeFalse(), "the informers show the earlier route gone")
}

// TestInformersRefused starts informers as a user the API server refuses: they stop rather
// than list again and again, the namespace is read uncached, and they are tried again after
// deniedRetry. A Role from before the hub watched ServiceImports (get and list only) keeps the
// routes watched and the ServiceImports read uncached.
func TestInformersRefused(t *testing.T) {
	e := startTrafficEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e.installServiceImports()
	e.apply(demo)
	hub := rest.CopyConfig(e.cfg)
	hub.Impersonate = rest.ImpersonationConfig{UserName: "rayfleet-hub"}
	inf, clk := startInformers(ctx, e, hub)
	ns := demoKey.Route.Namespace
	key := informersKey{namespace: ns}
	state := func() (denied, stopped bool) {
		inf.mu.Lock()
		defer inf.mu.Unlock()
		c := inf.caches[key]
		if c == nil {
			return false, false
		}
		return !c.denied.IsZero(), c.ctx.Err() != nil
	}

	NewWithT(t).Eventually(func() []bool {
		if _, ok := inf.Reader(ctx, "", ns); ok {
			t.Fatal("Reader without rights is ok")
		}
		d, s := state()
		return []bool{d, s}
	}, time.Minute, 50*time.Millisecond).Should(Equal([]bool{true, true}), "the refused informers stopped")
	if _, ok := inf.Reader(ctx, "", ns); ok {
		t.Fatal("Reader of refused informers is ok")
	}

	// The traffic rules as granted before the hub watched ServiceImports.
	rules := hubaccess.TrafficRules()
	for i := range rules {
		if slices.Contains(rules[i].Resources, "serviceimports") {
			rules[i].Verbs = []string{"get", "list"}
		}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traffic"}, Rules: rules}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traffic"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "traffic"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "rayfleet-hub"}}}
	for _, obj := range []client.Object{role, binding} {
		if err := e.c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(deniedRetry)
	NewWithT(t).Eventually(func() bool {
		_, ok := inf.Reader(ctx, "", ns)
		return ok
	}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "the informers, tried again, synced")

	// Listed, then refused the watch: removed, and not ok.
	NewWithT(t).Eventually(func() bool {
		inf.ImportsReader(ctx, "", ns)
		inf.mu.Lock()
		defer inf.mu.Unlock()
		c := inf.caches[key]
		return c.imports == nil && !c.importsDenied.IsZero()
	}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "the refused ServiceImports' informer was removed")
	if _, ok := inf.ImportsReader(ctx, "", ns); ok {
		t.Fatal("ImportsReader of a refused informer is ok")
	}
	if _, ok := inf.Reader(ctx, "", ns); !ok {
		t.Fatal("the routes are not read through the informers once the ServiceImports' were refused")
	}
}
