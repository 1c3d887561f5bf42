package traffic

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// liveOf holds a Service for each of services and an EndpointSlice for each of slices, by
// member.
func liveOf(services, slices []string) *Live {
	l := &Live{}
	for _, m := range services {
		l.Services = append(l.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: be(m)}})
	}
	for _, m := range slices {
		l.EndpointSlices = append(l.EndpointSlices, discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: be(m)}})
	}
	return l
}

// A backend gets weight in the route only once a read shows its objects: the gateway answers
// 500 for the share of a reference that does not resolve.
func TestUnresolved(t *testing.T) {
	blue := Backend{Cluster: "blue", Host: "10.0.0.1", Port: 8000, Weight: 5000}
	green := Backend{Cluster: "green", Host: "10.0.0.2", Port: 8000, Weight: 5000}
	greenDNS := Backend{Cluster: "green", Host: "serve.green.example.com", Port: 8000, Weight: 5000}
	tests := []struct {
		name string
		in   Input
		live *Live
		want []string
	}{
		{name: "both there", in: input("", blue, green), live: liveOf([]string{"blue", "green"}, []string{"blue", "green"})},
		{name: "green new", in: input("", blue, green), live: liveOf([]string{"blue"}, []string{"blue"}), want: []string{"green"}},
		{name: "green's Service without its EndpointSlice", in: input("", blue, green),
			live: liveOf([]string{"blue", "green"}, []string{"blue"}), want: []string{"green"}},
		{name: "a DNS name needs no EndpointSlice", in: input("", blue, greenDNS), live: liveOf([]string{"blue", "green"}, []string{"blue"})},
		{name: "nothing there yet", in: input("", blue, green), live: &Live{}, want: []string{"blue", "green"}},
		{name: "no weight, nothing to hold", in: input("", blue, Backend{Cluster: "green", Host: "10.0.0.2", Port: 8000}),
			live: liveOf([]string{"blue"}, []string{"blue"})},
		{name: "not read: nothing held", in: input("", blue, green)},
		{name: "ServiceImports are the member's to make", in: input(fleetv1alpha1.BackendServiceImport, Backend{Cluster: "blue", Weight: 1}),
			live: &Live{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(Unresolved(tt.in, tt.live)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Unresolved (-want +got):\n%s", diff)
			}
		})
	}
}

// A pending backend's objects are built, and the route does not refer to it.
func TestDesiredPending(t *testing.T) {
	objs, err := Desired(input("",
		Backend{Cluster: "blue", Host: "10.0.0.1", Port: 8000, Weight: 5000},
		Backend{Cluster: "green", Host: "10.0.0.2", Port: 8000, Weight: 5000, Pending: true}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service. " + be("blue") + ":8000=5000"}, refs(objs.Route)); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	var names []string
	for _, obj := range backendObjects(objs) {
		names = append(names, kindName(obj))
	}
	want := []string{"Service/" + be("blue"), "Service/" + be("green"), "EndpointSlice/" + be("blue"), "EndpointSlice/" + be("green")}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("backend objects (-want +got):\n%s", diff)
	}
}

// What the API server adds to an object (defaults, allocations) is no difference; a field the
// hub sets with another value is, and so is anything more in the route's spec, the hub's alone.
func TestHolds(t *testing.T) {
	objs, err := Desired(input("", Backend{Cluster: "blue", Host: "10.0.0.1", Port: 8000, Weight: 1}))
	if err != nil {
		t.Fatal(err)
	}
	svc := objs.Services[0]
	defaulted := svc.DeepCopy()
	defaulted.Spec.ClusterIP, defaulted.Spec.SessionAffinity = "10.96.0.7", corev1.ServiceAffinityNone
	defaulted.Labels["extra"], defaulted.ResourceVersion = "x", "12"
	if !holds(defaulted, svc) {
		t.Error("a defaulted Service does not hold the desired one")
	}
	moved := defaulted.DeepCopy()
	moved.Spec.Ports[0].Port = 9000
	if holds(moved, svc) {
		t.Error("a Service on another port holds the desired one")
	}
	relabelled := defaulted.DeepCopy()
	delete(relabelled.Labels, labels.TrafficCluster)
	if holds(relabelled, svc) {
		t.Error("a Service without a label the hub sets holds the desired one")
	}
	route := objs.Route
	if !holdsRoute(route.DeepCopy(), route) {
		t.Error("the route does not hold itself")
	}
	more := route.DeepCopy()
	more.Spec.Hostnames = []gwv1.Hostname{"old.example.com"}
	if holdsRoute(more, route) {
		t.Error("a route with a hostname the hub no longer sets holds the desired one")
	}
	reweighted := route.DeepCopy()
	reweighted.Spec.Rules[0].BackendRefs[0].Weight = ptr.To[int32](2)
	if holdsRoute(reweighted, route) {
		t.Error("a route with another weight holds the desired one")
	}
	// An empty list the hub sets is no list on the server: not a difference to write again.
	empty := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "s"}, Endpoints: []discoveryv1.Endpoint{}}
	if !holds(&discoveryv1.EndpointSlice{ObjectMeta: empty.ObjectMeta}, empty) {
		t.Error("an EndpointSlice without endpoints does not hold the desired one with none")
	}
	if holds(&discoveryv1.EndpointSlice{ObjectMeta: empty.ObjectMeta, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}}, empty) {
		t.Error("an EndpointSlice with an endpoint holds the desired one with none")
	}
}
