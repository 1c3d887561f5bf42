package traffic

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// trafficEnv is an API server with Gateway API's CRDs and the namespaces gw (the Gateway's)
// and apps (the RayServices').
type trafficEnv struct {
	t   *testing.T
	c   client.Client
	cfg *rest.Config
}

func startTrafficEnv(t *testing.T) *trafficEnv {
	env := envtest.Start(t, envtest.WithCRDDirectories("e2e/testdata/gateway-api"))
	for _, ns := range []string{"gw", "apps"} {
		if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	return &trafficEnv{t: t, c: env.Client, cfg: env.Config}
}

// apply builds and applies in, failing the test on an error.
func (e *trafficEnv) apply(in Input) *Objects {
	e.t.Helper()
	objs, err := Desired(in)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := Apply(e.t.Context(), e.c, e.c, objs); err != nil {
		e.t.Fatalf("Apply: %v", err)
	}
	return objs
}

// observe reads the route of in's RayService for the members us, eu and ap.
func (e *trafficEnv) observe(in Input) State {
	e.t.Helper()
	st, err := Observe(e.t.Context(), e.c, Key(in.RayService), []string{"us", "eu", "ap"})
	if err != nil {
		e.t.Fatalf("Observe: %v", err)
	}
	return st
}

// backends lists the names of the Services and EndpointSlices the hub made for in's
// RayService in its namespace, as "Service/name" and "EndpointSlice/name".
func (e *trafficEnv) backends(in Input) []string {
	e.t.Helper()
	return e.backendsIn(in.RayService.Namespace, in)
}

// backendsIn is backends in namespace.
func (e *trafficEnv) backendsIn(namespace string, in Input) []string {
	e.t.Helper()
	sel := client.MatchingLabels{labels.OriginNamespace: in.RayService.Namespace, labels.OriginName: in.RayService.Name}
	var svcs corev1.ServiceList
	var eps discoveryv1.EndpointSliceList
	if err := e.c.List(e.t.Context(), &svcs, client.InNamespace(namespace), sel); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.List(e.t.Context(), &eps, client.InNamespace(namespace), sel); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, s := range svcs.Items {
		out = append(out, "Service/"+s.Name)
	}
	for _, s := range eps.Items {
		out = append(out, "EndpointSlice/"+s.Name)
	}
	slices.Sort(out)
	return out
}

// setStatus plays the gateway: conditions for the route's Gateway gw/edge at generation gen,
// plus a refusal for another Gateway, which must not count.
func (e *trafficEnv) setStatus(key RouteKey, gen int64, conds ...metav1.Condition) {
	e.t.Helper()
	var route gwv1.HTTPRoute
	if err := e.c.Get(e.t.Context(), key.Route, &route); err != nil {
		e.t.Fatal(err)
	}
	for i := range conds {
		conds[i].ObservedGeneration, conds[i].LastTransitionTime = gen, metav1.Now()
	}
	route.Status.Parents = []gwv1.RouteParentStatus{
		{
			ParentRef:      gwv1.ParentReference{Name: "other", Namespace: ptr.To(gwv1.Namespace("gw"))},
			ControllerName: "example.com/gateway",
			Conditions:     []metav1.Condition{cond("Accepted", metav1.ConditionFalse, "NotAllowedByListeners", "no listener")},
		},
		{
			ParentRef:      gwv1.ParentReference{Name: "edge", Namespace: ptr.To(gwv1.Namespace("gw"))},
			ControllerName: "example.com/gateway",
			Conditions:     conds,
		},
	}
	route.Status.Parents[0].Conditions[0].ObservedGeneration = gen
	if err := e.c.Status().Update(e.t.Context(), &route); err != nil {
		e.t.Fatal(err)
	}
}

// acceptCurrent plays the gateway accepting the current generation of in's route.
func (e *trafficEnv) acceptCurrent(in Input) {
	e.t.Helper()
	e.setStatus(Key(in.RayService), e.observe(in).Generation, cond("Accepted", metav1.ConditionTrue, "Accepted", ""),
		cond("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", ""))
}

// usOnly are the backends of in's RayService when us, on an IP, is its only member.
func usOnly(in Input) []string {
	name := BackendName(Key(in.RayService), "us")
	return []string{"EndpointSlice/" + name, "Service/" + name}
}

func cond(t string, s metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, LastTransitionTime: metav1.Now()}
}

// The RayServices of the integration test: demo (us on an IPv4 address, eu on IPv6, ap on a
// hostname) and other, sharing the Gateway gw/edge.
var (
	demo = input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 30080, Weight: 5000},
		Backend{Cluster: "eu", Host: "2001:db8::2", Port: 30081, Weight: 3000},
		Backend{Cluster: "ap", Host: "lb.ap.example.com", Port: 443, Weight: 2000})
	demoKey = Key(demo.RayService)
	// allDemo are demo's backends: us and eu with an EndpointSlice, ap a hostname.
	allDemo = []string{"EndpointSlice/" + BackendName(demoKey, "eu"), "EndpointSlice/" + BackendName(demoKey, "us"),
		"Service/" + BackendName(demoKey, "ap"), "Service/" + BackendName(demoKey, "eu"), "Service/" + BackendName(demoKey, "us")}
	// shifted gives us everything, eu nothing, and drops ap.
	shifted = input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 30080, Weight: 10000},
		Backend{Cluster: "eu", Host: "2001:db8::2", Port: 30081})
	other = func() Input {
		in := input("", Backend{Cluster: "us", Host: "10.99.0.5", Port: 30090, Weight: 10000})
		in.RayService.Name = "other"
		return in
	}()
)

// TestApplyObserveDelete drives the route of one RayService through a real API server with
// Gateway API's CRDs, one step after the other.
func TestApplyObserveDelete(t *testing.T) {
	e := startTrafficEnv(t)
	for _, step := range []struct {
		name string
		run  func(e *trafficEnv)
	}{
		{"a new route waits for its backends", (*trafficEnv).heldUntilBackends},
		{"applied with three kinds of backends", (*trafficEnv).firstApply},
		{"weights shifted, a member dropped, acceptance by generation", (*trafficEnv).shift},
		{"an address changes kind", (*trafficEnv).addressKinds},
		{"drift reverted, no takeover", (*trafficEnv).driftAndTakeover},
		{"ServiceImport and no backend", (*trafficEnv).importsAndNone},
		{"ServiceImports read choose the export names", (*trafficEnv).importNames},
		{"deleted, leaving others", (*trafficEnv).deleteLeavingOthers},
	} {
		// Each step builds on the one before, so the first failure ends the test.
		if !t.Run(step.name, func(t *testing.T) { step.run(&trafficEnv{t: t, c: e.c, cfg: e.cfg}) }) {
			return
		}
	}
}

// heldUntilBackends plans a route no read has shown backends for: its backends are written and
// the route is not (it would route nothing); planned again on what is read then, the route is
// written with every cluster weighted. The RayService is gone afterwards.
func (e *trafficEnv) heldUntilBackends() {
	t := e.t
	ctx := t.Context()
	in := input("")
	in.RayService.Name = "held"
	shares := []Share{{Cluster: "us", Weight: 6000, Address: "10.99.0.1:30080"}, {Cluster: "eu", Weight: 4000, Address: "10.99.0.2:30080"}}
	key := Key(in.RayService)
	for i, want := range []map[string]int32{{"eu": 0, "us": 0}, {"eu": 4000, "us": 6000}} {
		_, live, err := Read(ctx, e.c, key, in.HubName, []string{"us", "eu"})
		if err != nil {
			t.Fatal(err)
		}
		d := Plan(PlanInput{Route: in, Shares: shares, Live: live})
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		if !maps.Equal(d.Weights, want) || d.Objects.RouteHeld != (i == 0) {
			t.Fatalf("plan %d: weights %v, route held %v; want %v, held %v", i, d.Weights, d.Objects.RouteHeld, want, i == 0)
		}
		if err := Write(ctx, e.c, e.c, d.Objects, live); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		st := e.observe(in)
		if st.Exists == (i == 0) {
			t.Fatalf("after write %d the route exists: %v", i, st.Exists)
		}
		if got := e.backends(in); len(got) != 4 {
			t.Fatalf("after write %d the backends are %v; want a Service and an EndpointSlice for us and eu", i, got)
		}
	}
	if err := Delete(ctx, e.c, e.c, key, in.HubName); err != nil {
		t.Fatal(err)
	}
}

// importNames reads the ServiceImports: none without the kind, then those of the namespace,
// and routes to the current export name of a member only once it is imported, the weights
// mapping back through either name.
func (e *trafficEnv) importNames() {
	t := e.t
	ctx := t.Context()
	got, err := ObserveImports(ctx, e.c, "apps")
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ObserveImports without the ServiceImport kind = %v, %v; want none and no error", got, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(mcscrd.ServiceImportCRD, &crd); err != nil {
		t.Fatal(err)
	}
	if _, err := crenvtest.InstallCRDs(e.cfg, crenvtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{&crd}}); err != nil {
		t.Fatal(err)
	}
	current := ImportName(demoKey, "us")
	for _, name := range []string{"demo-serve-us", "demo-serve-ap", current} {
		si := &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
			Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP,
				Ports: []mcsv1alpha1.ServicePort{{Port: ServePort, Protocol: corev1.ProtocolTCP}}}}
		if err := e.c.Create(ctx, si); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.Create(ctx, &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "elsewhere"},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP,
			Ports: []mcsv1alpha1.ServicePort{{Port: ServePort, Protocol: corev1.ProtocolTCP}}}}); err != nil {
		t.Fatal(err)
	}
	imports, err := ObserveImports(ctx, e.c, "apps")
	if err != nil {
		t.Fatal(err)
	}
	want := Imports{"demo-serve-us": true, "demo-serve-ap": true, current: true}
	if !maps.Equal(imports, want) {
		t.Errorf("ObserveImports = %v, want %v", imports, want)
	}
	in := input(fleetv1alpha1.BackendServiceImport, Backend{Cluster: "us", Weight: 6000}, Backend{Cluster: "ap", Weight: 4000})
	in.Imports = imports
	objs := e.apply(in)
	var refs []string
	for _, r := range objs.Route.Spec.Rules[0].BackendRefs {
		refs = append(refs, string(r.Name))
	}
	if wantRefs := []string{"demo-serve-ap", current}; !slices.Equal(refs, wantRefs) {
		t.Errorf("backendRefs = %v, want %v", refs, wantRefs)
	}
	if st := e.observe(demo); st.Weights["us"] != 6000 || st.Weights["ap"] != 4000 {
		t.Errorf("weights through the current and the legacy names = %v, want us 6000, ap 4000", st.Weights)
	}
}

func (e *trafficEnv) firstApply() {
	t := e.t
	e.apply(demo)
	e.apply(other)
	if got := e.backends(demo); !slices.Equal(got, allDemo) {
		t.Fatalf("backends after the first apply = %v, want %v", got, allDemo)
	}
	st := e.observe(demo)
	if !st.Exists || st.Accepted || st.Message != "no gateway has reported on the route yet" || len(st.Weights) != 3 ||
		st.Weights["us"] != 5000 || st.Weights["eu"] != 3000 || st.Weights["ap"] != 2000 {
		t.Fatalf("Observe before the gateway reported = %+v", st)
	}
	var route gwv1.HTTPRoute
	if err := e.c.Get(t.Context(), demoKey.Route, &route); err != nil {
		t.Fatal(err)
	}
	if mf := route.ManagedFields; len(mf) != 1 || mf[0].Manager != labels.HubFieldManager {
		t.Errorf("route managed fields %+v, want the hub's only", mf)
	}
	// Accepted for the current generation, references resolved: accepted.
	e.setStatus(demoKey, st.Generation, cond("Accepted", metav1.ConditionTrue, "Accepted", ""), cond("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", ""))
	if st = e.observe(demo); !st.Accepted || st.Message != "" {
		t.Fatalf("Observe after the gateway accepted = %+v", st)
	}
}

func (e *trafficEnv) shift() {
	t := e.t
	prev := e.observe(demo).Generation
	e.apply(shifted)
	// Make-before-break: the backends dropped stay until the gateway accepted the route
	// without them.
	if got := e.backends(demo); !slices.Equal(got, allDemo) {
		t.Errorf("backends after the shift, before the gateway accepted it = %v, want %v", got, allDemo)
	}
	// The acceptance of the previous generation no longer counts.
	st := e.observe(demo)
	if st.Accepted || st.Refused || st.Generation <= prev || !strings.Contains(st.Message, "has not reported on generation") ||
		len(st.Weights) != 1 || st.Weights["us"] != 10000 {
		t.Fatalf("Observe after the shift = %+v", st)
	}
	e.acceptCurrent(demo)
	e.apply(shifted)
	if got, want := e.backends(demo), usOnly(demo); !slices.Equal(got, want) {
		t.Errorf("backends after the gateway accepted the shift = %v, want %v", got, want)
	}
	// Accepted but a reference does not resolve: not accepted, in the gateway's words.
	e.setStatus(demoKey, st.Generation, cond("Accepted", metav1.ConditionTrue, "Accepted", ""),
		cond("ResolvedRefs", metav1.ConditionFalse, "BackendNotFound", "service gw/apps-demo-us not found"))
	if st = e.observe(demo); st.Accepted || !st.Refused || st.Reason != "BackendNotFound" ||
		!strings.Contains(st.Message, "BackendNotFound: service gw/apps-demo-us not found") {
		t.Fatalf("Observe with a reference unresolved = %+v", st)
	}
	e.setStatus(demoKey, st.Generation, cond("Accepted", metav1.ConditionFalse, "NoMatchingListenerHostname", "no hostname matches"))
	if st = e.observe(demo); st.Accepted || !st.Refused || st.Reason != "NoMatchingListenerHostname" ||
		!strings.Contains(st.Message, "did not accept the route: NoMatchingListenerHostname: no hostname matches") {
		t.Fatalf("Observe with the route refused = %+v", st)
	}
}

// addressKinds turns us's address from an IP into a hostname and back: the Service changes
// type, and the EndpointSlice goes and comes back.
func (e *trafficEnv) addressKinds() {
	t := e.t
	e.acceptCurrent(demo)
	for _, host := range []string{"lb.us.example.com", "10.99.0.1"} {
		e.apply(input("", Backend{Cluster: "us", Host: host, Port: 30080, Weight: 10000}))
		var svc corev1.Service
		if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: BackendName(demoKey, "us")}, &svc); err != nil {
			t.Fatal(err)
		}
		wantType, wantBackends := corev1.ServiceTypeClusterIP, usOnly(demo)
		if host != "10.99.0.1" {
			wantType, wantBackends = corev1.ServiceTypeExternalName, []string{"Service/" + BackendName(demoKey, "us")}
		}
		if got := e.backends(demo); svc.Spec.Type != wantType || !slices.Equal(got, wantBackends) {
			t.Errorf("with us at %s: Service type %s, backends %v; want %s, %v", host, svc.Spec.Type, got, wantType, wantBackends)
		}
	}
}

// driftAndTakeover edits the weight under another field manager, which applying again
// reverts, and puts a user's Service where eu's backend would go, which Apply leaves alone.
func (e *trafficEnv) driftAndTakeover() {
	t, ctx := e.t, e.t.Context()
	var route gwv1.HTTPRoute
	if err := e.c.Get(ctx, demoKey.Route, &route); err != nil {
		t.Fatal(err)
	}
	route.Spec.Rules[0].BackendRefs[0].Weight = ptr.To[int32](1)
	if err := e.c.Update(ctx, &route, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	e.apply(shifted)
	if st := e.observe(demo); st.Weights["us"] != 10000 {
		t.Errorf("weights after re-applying over an edit = %v, want us 10000", st.Weights)
	}

	userSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: BackendName(demoKey, "eu")},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "mine"}},
	}
	if err := e.c.Create(ctx, userSvc); err != nil {
		t.Fatal(err)
	}
	objs, err := Desired(demo)
	if err != nil {
		t.Fatal(err)
	}
	if err = Apply(ctx, e.c, e.c, objs); err == nil || !strings.Contains(err.Error(), "Service "+BackendName(demoKey, "eu")+" in namespace apps exists and is not hub rayfleet's") {
		t.Errorf("Apply over a user's Service = %v, want a refusal naming it", err)
	}
	if err = e.c.Get(ctx, client.ObjectKeyFromObject(userSvc), userSvc); err != nil || userSvc.Spec.Selector["app"] != "mine" {
		t.Errorf("the user's Service after Apply: %+v, %v", userSvc.Spec, err)
	}
}

func (e *trafficEnv) importsAndNone() {
	t := e.t
	// ServiceImport backends: the Services go once the gateway accepted the route without
	// them, the weights map back through the export names.
	imports := input(fleetv1alpha1.BackendServiceImport, Backend{Cluster: "us", Weight: 7000}, Backend{Cluster: "ap", Weight: 3000})
	e.acceptCurrent(demo)
	e.apply(imports)
	if st := e.observe(demo); len(st.Weights) != 2 || st.Weights["us"] != 7000 || st.Weights["ap"] != 3000 {
		t.Errorf("weights with ServiceImport backends = %v, want us 7000, ap 3000", st.Weights)
	}
	if got, want := e.backends(demo), usOnly(demo); !slices.Equal(got, want) {
		t.Errorf("backends before the gateway accepted the ServiceImport backends = %v, want %v", got, want)
	}
	e.acceptCurrent(demo)
	e.apply(imports)
	if got := e.backends(demo); len(got) != 0 {
		t.Errorf("backends with ServiceImport backends = %v, want none", got)
	}
	// No backend at all: the CRD takes a rule without backendRefs.
	e.apply(input(""))
	if st := e.observe(demo); !st.Exists || len(st.Weights) != 0 {
		t.Errorf("Observe with no backend = %+v", st)
	}
	if got := e.backends(demo); len(got) != 0 {
		t.Errorf("backends with none wanted = %v", got)
	}
}

// deleteLeavingOthers deletes demo's route and backends, twice without error, leaving the
// other RayService's objects and the user's Service; another hub's Delete touches nothing.
func (e *trafficEnv) deleteLeavingOthers() {
	t, ctx := e.t, e.t.Context()
	e.apply(shifted)
	for range 2 {
		if err := Delete(ctx, e.c, e.c, demoKey, "rayfleet"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	var route gwv1.HTTPRoute
	if err := e.c.Get(ctx, demoKey.Route, &route); !apierrors.IsNotFound(err) {
		t.Errorf("route after Delete: %v, want NotFound", err)
	}
	if got := e.backends(demo); len(got) != 0 {
		t.Errorf("backends after Delete = %v", got)
	}
	if st := e.observe(demo); st.Exists || st.Accepted {
		t.Errorf("Observe after Delete = %+v", st)
	}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: BackendName(demoKey, "eu")}, &corev1.Service{}); err != nil {
		t.Errorf("the user's Service after Delete: %v", err)
	}
	otherKey := Key(other.RayService)
	for _, hub := range []string{"", "another-hub"} {
		if hub != "" {
			if err := Delete(ctx, e.c, e.c, otherKey, hub); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.c.Get(ctx, otherKey.Route, &route); err != nil {
			t.Errorf("the other RayService's route (after a Delete by %q): %v", hub, err)
		}
		if got, want := e.backends(other), usOnly(other); !slices.Equal(got, want) {
			t.Errorf("the other RayService's backends (after a Delete by %q) = %v", hub, got)
		}
	}
}
