package traffic

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/names"
)

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in       string
		wantHost string
		wantPort int32
		wantErr  string
	}{
		{in: "10.99.0.1:30080", wantHost: "10.99.0.1", wantPort: 30080},
		{in: "[2001:db8::1]:8000", wantHost: "2001:db8::1", wantPort: 8000},
		{in: "serve.us.example.com:443", wantHost: "serve.us.example.com", wantPort: 443},
		{in: "2001:db8::1:8000", wantErr: "too many colons"},
		{in: "10.99.0.1", wantErr: "missing port"},
		{in: "10.99.0.1:0", wantErr: "not a port number"},
		{in: "10.99.0.1:65536", wantErr: "not a port number"},
		{in: "10.99.0.1:http", wantErr: "not a port number"},
		{in: ":8000", wantErr: "neither an IP nor a DNS name"},
		{in: "Serve_Host:8000", wantErr: "neither an IP nor a DNS name"},
		{in: "[fe80::1%eth0]:8000", wantErr: "zone"},
		{in: "", wantErr: "missing port"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			host, port, err := ParseAddress(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseAddress(%q) = %q, %d, %v; want an error containing %q", tt.in, host, port, err, tt.wantErr)
				}
				return
			}
			if err != nil || host != tt.wantHost || port != tt.wantPort {
				t.Errorf("ParseAddress(%q) = %q, %d, %v; want %q, %d", tt.in, host, port, err, tt.wantHost, tt.wantPort)
			}
		})
	}
}

// input is a RayService demo/apps routed through Gateway gw/edge.
func input(kind fleetv1alpha1.BackendKind, backends ...Backend) Input {
	return Input{
		RayService: types.NamespacedName{Namespace: "apps", Name: "demo"},
		HubName:    "rayfleet",
		Spec: fleetv1alpha1.TrafficSpec{
			ParentRef:   fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "edge"},
			BackendKind: kind,
		},
		Backends: backends,
	}
}

// withImports is in with the traffic cluster's ServiceImports named imported.
func withImports(in Input, imported ...string) Input {
	in.Imports = Imports{}
	for _, n := range imported {
		in.Imports[n] = true
	}
	return in
}

// imp is the current ServiceImport name of demo/apps's backend for member.
func imp(member string) string {
	return ImportName(Key(types.NamespacedName{Namespace: "apps", Name: "demo"}), member)
}

// be is the name of demo/apps's backend for member.
func be(member string) string {
	return BackendName(Key(types.NamespacedName{Namespace: "apps", Name: "demo"}), member)
}

// refs summarizes a route's backendRefs as "kind namespace/name:port=weight".
func refs(r *gwv1.HTTPRoute) []string {
	var out []string
	for _, ref := range r.Spec.Rules[0].BackendRefs {
		ns := ""
		if ref.Namespace != nil {
			ns = string(*ref.Namespace) + "/"
		}
		out = append(out, fmt.Sprintf("%s.%s %s%s:%d=%d", *ref.Kind, *ref.Group, ns, ref.Name, *ref.Port, *ref.Weight))
	}
	return out
}

func TestDesiredBackends(t *testing.T) {
	tests := []struct {
		name     string
		in       Input
		wantRefs []string
		// wantServices are "name type externalName"; wantSlices "name addressType address:port".
		wantServices []string
		wantSlices   []string
	}{
		{
			name: "IPv4 and IPv6 get a selectorless Service and an EndpointSlice each",
			in: input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 30080, Weight: 6000},
				Backend{Cluster: "eu", Host: "2001:db8::2", Port: 30081, Weight: 4000}),
			wantRefs:     []string{"Service. " + be("eu") + ":30081=4000", "Service. " + be("us") + ":30080=6000"},
			wantServices: []string{be("eu") + " ClusterIP ", be("us") + " ClusterIP "},
			wantSlices:   []string{be("eu") + " IPv6 2001:db8::2:30081", be("us") + " IPv4 10.99.0.1:30080"},
		},
		{
			name:         "an IPv4-mapped IPv6 address is IPv4",
			in:           input(fleetv1alpha1.BackendService, Backend{Cluster: "us", Host: "::ffff:10.99.0.7", Port: 80, Weight: 1}),
			wantRefs:     []string{"Service. " + be("us") + ":80=1"},
			wantServices: []string{be("us") + " ClusterIP "},
			wantSlices:   []string{be("us") + " IPv4 10.99.0.7:80"},
		},
		{
			name:         "a hostname gets an ExternalName Service and no EndpointSlice",
			in:           input("", Backend{Cluster: "us", Host: "lb.us.example.com", Port: 443, Weight: 10000}),
			wantRefs:     []string{"Service. " + be("us") + ":443=10000"},
			wantServices: []string{be("us") + " ExternalName lb.us.example.com."},
		},
		{
			name: "weight 0 and no address get nothing",
			in: input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 30080, Weight: 0},
				Backend{Cluster: "eu", Weight: 10000}, Backend{Cluster: "ap", Host: "10.99.0.3", Port: 30080, Weight: 10000}),
			wantRefs:     []string{"Service. " + be("ap") + ":30080=10000"},
			wantServices: []string{be("ap") + " ClusterIP "},
			wantSlices:   []string{be("ap") + " IPv4 10.99.0.3:30080"},
		},
		{
			name: "no backend leaves the rule without backendRefs",
			in:   input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 30080}),
		},
		{
			name: "ServiceImport backends without imports read refer to the legacy exports and make no Service",
			in: input(fleetv1alpha1.BackendServiceImport, Backend{Cluster: "us", Weight: 2500},
				Backend{Cluster: "ap", Host: "10.99.0.3", Port: 30080, Weight: 7500}, Backend{Cluster: "eu"}),
			wantRefs: []string{"ServiceImport.multicluster.x-k8s.io demo-serve-ap:8000=7500",
				"ServiceImport.multicluster.x-k8s.io demo-serve-us:8000=2500"},
		},
		{
			name: "ServiceImport backends refer to the current export where the traffic cluster imports it",
			in: withImports(input(fleetv1alpha1.BackendServiceImport, Backend{Cluster: "us", Weight: 2500},
				Backend{Cluster: "ap", Weight: 7500}), imp("us"), "demo-serve-ap", "demo-serve-us"),
			wantRefs: []string{"ServiceImport.multicluster.x-k8s.io demo-serve-ap:8000=7500",
				"ServiceImport.multicluster.x-k8s.io " + imp("us") + ":8000=2500"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Desired(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantRefs, refs(objs.Route)); diff != "" {
				t.Errorf("backendRefs (-want +got):\n%s", diff)
			}
			var services, slices []string
			for _, s := range objs.Services {
				services = append(services, fmt.Sprintf("%s %s %s", s.Name, s.Spec.Type, s.Spec.ExternalName))
				if len(s.Spec.Selector) > 0 || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "serve" {
					t.Errorf("Service %s: selector %v, ports %+v; want none and one port named serve", s.Name, s.Spec.Selector, s.Spec.Ports)
				}
				checkMemberLabels(t, s.Labels, s.Name)
			}
			for _, e := range objs.EndpointSlices {
				slices = append(slices, fmt.Sprintf("%s %s %s:%d", e.Name, e.AddressType, e.Endpoints[0].Addresses[0], *e.Ports[0].Port))
				if e.Labels[discoveryv1.LabelServiceName] != e.Name || e.Labels[discoveryv1.LabelManagedBy] != "rayfleet-hub" ||
					!*e.Endpoints[0].Conditions.Ready || *e.Ports[0].Name != "serve" {
					t.Errorf("EndpointSlice %s: labels %v, endpoint %+v, ports %+v", e.Name, e.Labels, e.Endpoints, e.Ports)
				}
				checkMemberLabels(t, e.Labels, e.Name)
			}
			if diff := cmp.Diff(tt.wantServices, services); diff != "" {
				t.Errorf("Services (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSlices, slices); diff != "" {
				t.Errorf("EndpointSlices (-want +got):\n%s", diff)
			}
		})
	}
}

// checkMemberLabels checks a per-member object's origin and member labels.
func checkMemberLabels(t *testing.T, l map[string]string, name string) {
	t.Helper()
	if l[labels.OriginNamespace] != "apps" || l[labels.OriginName] != "demo" || l[labels.OriginHub] != "rayfleet" ||
		name != be(l[labels.TrafficCluster]) {
		t.Errorf("%s: labels %v, want demo/apps's of hub rayfleet and its member", name, l)
	}
}

func TestDesiredRefuses(t *testing.T) {
	many := input("")
	for i := range fleetv1alpha1.MaxRouteBackends + 1 {
		many.Backends = append(many.Backends, Backend{Cluster: fmt.Sprintf("m%02d", i), Host: fmt.Sprintf("10.99.0.%d", i+1), Port: 80, Weight: 1})
	}
	atLimit := many
	atLimit.Backends = many.Backends[:fleetv1alpha1.MaxRouteBackends]
	if objs, err := Desired(atLimit); err != nil || len(objs.Route.Spec.Rules[0].BackendRefs) != fleetv1alpha1.MaxRouteBackends {
		t.Fatalf("Desired with %d backends: %v", fleetv1alpha1.MaxRouteBackends, err)
	}
	// Members beyond the limit without weight do not count.
	withIdle := many
	withIdle.Backends = append(append([]Backend{}, atLimit.Backends...), Backend{Cluster: "idle", Host: "10.99.0.99", Port: 80})
	if _, err := Desired(withIdle); err != nil {
		t.Fatalf("Desired with %d weighted backends and one idle: %v", fleetv1alpha1.MaxRouteBackends, err)
	}
	noHub := input("")
	noHub.HubName = ""
	tests := []struct {
		name    string
		in      Input
		wantErr string
	}{
		{name: "more backends than a rule takes", in: many, wantErr: "at most 16 backends"},
		{name: "a member twice", in: input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 80, Weight: 1},
			Backend{Cluster: "us", Host: "10.99.0.2", Port: 80, Weight: 1}), wantErr: "cluster us is given twice"},
		{name: "loopback", in: input("", Backend{Cluster: "us", Host: "127.0.0.1", Port: 80, Weight: 1}), wantErr: "cluster us: serve address 127.0.0.1 is unspecified, loopback or link-local"},
		{name: "IPv6 loopback", in: input("", Backend{Cluster: "us", Host: "::1", Port: 80, Weight: 1}), wantErr: "loopback"},
		{name: "link-local", in: input("", Backend{Cluster: "us", Host: "169.254.1.1", Port: 80, Weight: 1}), wantErr: "link-local"},
		{name: "not a host", in: input("", Backend{Cluster: "us", Host: "a host", Port: 80, Weight: 1}), wantErr: "cluster us: host \"a host\" is neither"},
		{name: "no hub name", in: noHub, wantErr: "a hub name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Desired(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "apps/demo") {
				t.Errorf("Desired = %v, want an error naming apps/demo and containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDesiredRoute(t *testing.T) {
	withListener := input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 80, Weight: 1})
	withListener.Spec.ParentRef.SectionName = "https"
	withListener.Spec.Hostnames = []string{"demo.example.com", "*.demo.example.com"}
	withListener.Spec.PathPrefix = "/v1/predict"
	sameNamespace := input("")
	sameNamespace.Spec.ParentRef.Namespace = "apps"
	tests := []struct {
		name          string
		in            Input
		wantName      string
		wantNamespace string
		wantSection   string
		wantHostnames []gwv1.Hostname
		wantPath      string
	}{
		{name: "defaults", in: input(""), wantName: "demo", wantNamespace: "apps", wantPath: "/"},
		{name: "listener, hostnames and path", in: withListener, wantName: "demo", wantNamespace: "apps", wantSection: "https",
			wantHostnames: []gwv1.Hostname{"demo.example.com", "*.demo.example.com"}, wantPath: "/v1/predict"},
		{name: "Gateway in the RayService's namespace", in: sameNamespace, wantName: "demo", wantNamespace: "apps", wantPath: "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Desired(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			r := objs.Route
			if r.Name != tt.wantName || r.Namespace != tt.wantNamespace {
				t.Errorf("route %s/%s, want %s/%s", r.Namespace, r.Name, tt.wantNamespace, tt.wantName)
			}
			if r.Labels[labels.OriginNamespace] != "apps" || r.Labels[labels.OriginName] != "demo" || r.Labels[labels.OriginHub] != "rayfleet" ||
				r.Labels[labels.TrafficCluster] != "" {
				t.Errorf("route labels %v", r.Labels)
			}
			if len(r.Spec.ParentRefs) != 1 {
				t.Fatalf("parentRefs %+v, want one", r.Spec.ParentRefs)
			}
			p := r.Spec.ParentRefs[0]
			section := ""
			if p.SectionName != nil {
				section = string(*p.SectionName)
			}
			if *p.Group != gwv1.GroupName || *p.Kind != "Gateway" || *p.Namespace != gwv1.Namespace(tt.in.Spec.ParentRef.Namespace) ||
				p.Name != "edge" || section != tt.wantSection {
				t.Errorf("parentRef %s/%s %s/%s section %q, want the Gateway %s/edge section %q",
					*p.Group, *p.Kind, *p.Namespace, p.Name, section, tt.in.Spec.ParentRef.Namespace, tt.wantSection)
			}
			if diff := cmp.Diff(tt.wantHostnames, r.Spec.Hostnames); diff != "" {
				t.Errorf("hostnames (-want +got):\n%s", diff)
			}
			if len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].Matches) != 1 {
				t.Fatalf("rules %+v, want one with one match", r.Spec.Rules)
			}
			m := r.Spec.Rules[0].Matches[0].Path
			if *m.Type != gwv1.PathMatchPathPrefix || *m.Value != tt.wantPath {
				t.Errorf("path match %s %s, want PathPrefix %s", *m.Type, *m.Value, tt.wantPath)
			}
		})
	}
}

func TestNames(t *testing.T) {
	long := strings.Repeat("r", 63)
	member := strings.Repeat("m", 63)
	nn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	// Pairs that must not share a backend name: each is (RayService, member).
	tests := []struct {
		name       string
		rsA, rsB   types.NamespacedName
		memA, memB string
	}{
		{name: "a dash moved between namespace and name", rsA: nn("team-a", "x"), rsB: nn("team", "a-x"), memA: "us", memB: "us"},
		{name: "a dash moved between name and member", rsA: nn("apps", "demo-us"), rsB: nn("apps", "demo"), memA: "east", memB: "us-east"},
		{name: "long names differing at the end", rsA: nn("apps", long), rsB: nn("apps", long[1:]+"s"), memA: member, memB: member},
		{name: "one RayService, two members", rsA: nn("apps", "demo"), rsB: nn("apps", "demo"), memA: "us", memB: "eu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := BackendName(Key(tt.rsA), tt.memA), BackendName(Key(tt.rsB), tt.memB)
			if a == b {
				t.Errorf("%s/%s and %s/%s share the backend name %q", tt.rsA, tt.memA, tt.rsB, tt.memB, a)
			}
			for _, name := range []string{a, b, ImportName(Key(tt.rsA), tt.memA)} {
				if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
					t.Errorf("%q is not a Service name: %v", name, errs)
				}
			}
			if BackendName(Key(tt.rsA), tt.memA) != a {
				t.Errorf("backend name of %s/%s changed between two calls", tt.rsA, tt.memA)
			}
		})
	}
	// The route lives with the RayService: two RayServices never share one.
	if a, b := Key(nn("team-a", "x")), Key(nn("team", "a-x")); a.Route == b.Route || a.Route != nn("team-a", "x") {
		t.Errorf("routes %v and %v, want each in its RayService's namespace under its name", a.Route, b.Route)
	}
	if got := LegacyImportName(Key(nn("apps", "demo")), "us"); got != "demo-serve-us" {
		t.Errorf("LegacyImportName = %q, want the legacy export name demo-serve-us", got)
	}
	if got, want := ImportName(Key(nn("apps", "demo")), "us"), names.ServeExport("demo", "us"); got != want {
		t.Errorf("ImportName = %q, want the spoke's export name %q", got, want)
	}
}

// TestImportFor covers the version skew of the export names: an old spoke exports the legacy
// name only, a new one both; an old traffic Role lets the hub read no ServiceImports.
func TestImportFor(t *testing.T) {
	nn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	xServe, x := Key(nn("apps", "x-serve")), Key(nn("apps", "x"))
	tests := []struct {
		name    string
		key     RouteKey
		member  string
		imports Imports
		want    string
	}{
		{name: "imports not readable: legacy", key: x, member: "serve-y", want: "x-serve-serve-y"},
		{name: "old spoke, only the legacy import", key: x, member: "serve-y",
			imports: Imports{"x-serve-serve-y": true}, want: "x-serve-serve-y"},
		{name: "new spoke, both imports: the current one", key: x, member: "serve-y",
			imports: Imports{"x-serve-serve-y": true, ImportName(x, "serve-y"): true}, want: ImportName(x, "serve-y")},
		{name: "the other RayService of the ambiguous pair", key: xServe, member: "y",
			imports: Imports{"x-serve-serve-y": true, ImportName(x, "serve-y"): true, ImportName(xServe, "y"): true},
			want:    ImportName(xServe, "y")},
		{name: "another member's current import does not count", key: xServe, member: "y",
			imports: Imports{ImportName(x, "serve-y"): true}, want: "x-serve-serve-y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := importFor(tt.key, tt.member, tt.imports); got != tt.want {
				t.Errorf("importFor = %q, want %q", got, tt.want)
			}
		})
	}
	if ImportName(xServe, "y") == ImportName(x, "serve-y") {
		t.Errorf("x-serve on y and x on serve-y share the import %q", ImportName(x, "serve-y"))
	}
}

func TestLegacyKey(t *testing.T) {
	gw := &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "edge"}}
	tests := []struct {
		name   string
		rs     types.NamespacedName
		want   types.NamespacedName
		wantOK bool
	}{
		{name: "another namespace: prefixed, in the Gateway's", rs: types.NamespacedName{Namespace: "apps", Name: "demo"},
			want: types.NamespacedName{Namespace: "gw", Name: "apps-demo"}, wantOK: true},
		{name: "the Gateway's namespace: the route itself", rs: types.NamespacedName{Namespace: "gw", Name: "demo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := LegacyKey(tt.rs, gw)
			if ok != tt.wantOK || got.Route != tt.want || (ok && got.RayService != tt.rs) {
				t.Errorf("LegacyKey(%s) = %+v, %v; want route %s, %v", tt.rs, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetirable(t *testing.T) {
	tests := []struct {
		name string
		st   State
		want bool
	}{
		{name: "accepted", st: State{Exists: true, Accepted: true}, want: true},
		{name: "not reported on yet", st: State{Exists: true, Message: "no gateway has reported on the route yet"}},
		{name: "refused by the listeners", st: State{Exists: true, Refused: true, Reason: "NotAllowedByListeners"}},
		{name: "not written yet", st: State{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Retirable(tt.st); got != tt.want {
				t.Errorf("Retirable(%+v) = %v, want %v", tt.st, got, tt.want)
			}
		})
	}
}

// The objects Desired builds are what the API server's defaulting would keep: a Service port's
// targetPort is set (an absent one would be filled in and fought over by every apply).
func TestDesiredServicePorts(t *testing.T) {
	objs, err := Desired(input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 30080, Weight: 1}))
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.ServicePort{{Name: "serve", Protocol: corev1.ProtocolTCP, Port: 30080, TargetPort: intstr.FromInt32(30080)}}
	if diff := cmp.Diff(want, objs.Services[0].Spec.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
}
