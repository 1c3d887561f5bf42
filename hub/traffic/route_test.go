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
			wantRefs:     []string{"Service. apps-demo-eu:30081=4000", "Service. apps-demo-us:30080=6000"},
			wantServices: []string{"apps-demo-eu ClusterIP ", "apps-demo-us ClusterIP "},
			wantSlices:   []string{"apps-demo-eu IPv6 2001:db8::2:30081", "apps-demo-us IPv4 10.99.0.1:30080"},
		},
		{
			name:         "an IPv4-mapped IPv6 address is IPv4",
			in:           input(fleetv1alpha1.BackendService, Backend{Cluster: "us", Host: "::ffff:10.99.0.7", Port: 80, Weight: 1}),
			wantRefs:     []string{"Service. apps-demo-us:80=1"},
			wantServices: []string{"apps-demo-us ClusterIP "},
			wantSlices:   []string{"apps-demo-us IPv4 10.99.0.7:80"},
		},
		{
			name:         "a hostname gets an ExternalName Service and no EndpointSlice",
			in:           input("", Backend{Cluster: "us", Host: "lb.us.example.com", Port: 443, Weight: 10000}),
			wantRefs:     []string{"Service. apps-demo-us:443=10000"},
			wantServices: []string{"apps-demo-us ExternalName lb.us.example.com."},
		},
		{
			name: "weight 0 and no address get nothing",
			in: input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 30080, Weight: 0},
				Backend{Cluster: "eu", Weight: 10000}, Backend{Cluster: "ap", Host: "10.99.0.3", Port: 30080, Weight: 10000}),
			wantRefs:     []string{"Service. apps-demo-ap:30080=10000"},
			wantServices: []string{"apps-demo-ap ClusterIP "},
			wantSlices:   []string{"apps-demo-ap IPv4 10.99.0.3:30080"},
		},
		{
			name: "no backend leaves the rule without backendRefs",
			in:   input("", Backend{Cluster: "us", Host: "10.99.0.1", Port: 30080}),
		},
		{
			name: "ServiceImport backends refer to the members' exports, across namespaces, and make no Service",
			in: input(fleetv1alpha1.BackendServiceImport, Backend{Cluster: "us", Weight: 2500},
				Backend{Cluster: "ap", Host: "10.99.0.3", Port: 30080, Weight: 7500}, Backend{Cluster: "eu"}),
			wantRefs: []string{"ServiceImport.multicluster.x-k8s.io apps/demo-serve-ap:8000=7500",
				"ServiceImport.multicluster.x-k8s.io apps/demo-serve-us:8000=2500"},
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
		!strings.HasSuffix(name, "-"+l[labels.TrafficCluster]) {
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
		{name: "defaults", in: input(""), wantName: "apps-demo", wantNamespace: "gw", wantPath: "/"},
		{name: "listener, hostnames and path", in: withListener, wantName: "apps-demo", wantNamespace: "gw", wantSection: "https",
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

func TestNamesAreBoundedAndStable(t *testing.T) {
	longNS, longName := strings.Repeat("n", 63), strings.Repeat("r", 47)
	member := strings.Repeat("m", 63)
	key := Key(types.NamespacedName{Namespace: longNS, Name: longName}, &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw"}})
	other := Key(types.NamespacedName{Namespace: longNS, Name: longName[1:]}, &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw"}})
	for _, name := range []string{key.Route.Name, BackendName(key, member), ImportName(key, member), BackendName(key, "us")} {
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			t.Errorf("%q is not a Service name: %v", name, errs)
		}
	}
	if again := Key(key.RayService, &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw"}}); again != key ||
		BackendName(again, member) != BackendName(key, member) {
		t.Errorf("names changed between two calls: %v, %v", key, again)
	}
	if key.Route.Name == other.Route.Name || BackendName(key, "us") == BackendName(other, "us") || BackendName(key, "us") == BackendName(key, "eu") {
		t.Errorf("distinct RayServices or members share a name: %q, %q", key.Route.Name, other.Route.Name)
	}
	if got := ImportName(key, "us"); got != longName+"-serve-us" {
		t.Errorf("ImportName = %q, want the spoke's export name %s-serve-us", got, longName)
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
