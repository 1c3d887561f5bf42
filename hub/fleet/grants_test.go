package fleet

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/hub/grants"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// TestDecideGrants tables what the namespace's grants do to a decision: nothing new where no
// grant reaches, and what a RayService had before grants existed kept, with the condition.
func TestDecideGrants(t *testing.T) {
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{client: fake.NewClientBuilder().WithScheme(sch).Build(), memory: memory{validSpecs: validation.NewSpecMemo()}}
	hub := raybuilder.MakeRayService("svc", "team").Annotation(labels.PlacementPolicy, "two").Obj()
	web := &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "public"},
		Hostnames: []string{"a.example.com"}, PathPrefix: "/"}
	policy := func(tr *fleetv1alpha1.TrafficSpec) *fleetv1alpha1.PlacementPolicy {
		return &fleetv1alpha1.PlacementPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "two"},
			Spec: fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), Traffic: tr,
				Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone}},
		}
	}
	onlyA := []fleetv1alpha1.NamespaceGrant{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: fleetv1alpha1.NamespaceGrantSpec{
		Namespaces: []string{"team"}, Members: &fleetv1alpha1.MemberGrant{ClusterNames: []string{"a"}},
	}}}
	routed := routeRead{state: traffic.State{Exists: true,
		Matches: traffic.Matches{GatewayNamespace: "gw", Gateway: "public", Hostnames: []string{"a.example.com"}, PathPrefix: "/"}}}
	const noneMsg = "namespace team has no NamespaceGrant: nothing is placed until the hub's admin applies one"

	tests := []struct {
		name        string
		grants      []fleetv1alpha1.NamespaceGrant
		policy      *fleetv1alpha1.PlacementPolicy
		binding     *fleetv1alpha1.RayServiceBinding
		route       routeRead
		wantPlaced  []string
		wantPlacedR string
		// wantGrant is the GrantMissing reason and the start of each part of its message;
		// "" for no condition.
		wantGrant    string
		wantMessage  []string
		wantTraffic  bool
		wantNoRoute  bool
		wantApplyErr string
	}{{
		name:        "a fresh install: a namespace without a grant is not placed",
		policy:      policy(nil),
		wantPlacedR: fleetv1alpha1.ReasonNotGranted,
		wantGrant:   fleetv1alpha1.ReasonNotGranted, wantMessage: []string{noneMsg},
	}, {
		name:   "an upgrade: a RayService placed before grants keeps its members, with a warning",
		policy: policy(nil), binding: placedOn("a", "b"),
		wantPlaced: []string{"a", "b"}, wantPlacedR: fleetv1alpha1.ReasonClustersChosen,
		wantGrant:   fleetv1alpha1.ReasonKeptWithoutGrant,
		wantMessage: []string{"namespace team has no NamespaceGrant for member a, b, where the RayService was placed before"},
	}, {
		name:   "an upgrade: a kept RayService goes to no new member",
		policy: policy(nil), binding: placedOn("a"),
		wantPlaced: []string{"a"}, wantPlacedR: fleetv1alpha1.ReasonInsufficientClusters,
		wantGrant: fleetv1alpha1.ReasonNotGranted,
		wantMessage: []string{"namespace team has no NamespaceGrant for member b, c; the RayService is placed on no more members",
			"namespace team has no NamespaceGrant for member a, where the RayService was placed before"},
	}, {
		name:   "only the granted member is chosen",
		grants: onlyA, policy: policy(nil),
		wantPlaced: []string{"a"}, wantPlacedR: fleetv1alpha1.ReasonInsufficientClusters,
		wantGrant:   fleetv1alpha1.ReasonNotGranted,
		wantMessage: []string{"namespace team has no NamespaceGrant for member b, c"},
	}, {
		name:   "traffic not granted: no route",
		grants: []fleetv1alpha1.NamespaceGrant{*grantAllMembersOnly()}, policy: policy(web),
		wantPlaced: []string{"a", "b"}, wantPlacedR: fleetv1alpha1.ReasonClustersChosen,
		wantGrant:   fleetv1alpha1.ReasonNotGranted,
		wantMessage: []string{"namespace team has no NamespaceGrant for the hub's cluster as traffic cluster; no route is written"},
		wantTraffic: true, wantNoRoute: true,
	}, {
		name:   "traffic routed before grants, exactly as the policy asks: kept",
		grants: []fleetv1alpha1.NamespaceGrant{*grantAllMembersOnly()}, policy: policy(web), route: routed,
		binding:    placedOn("a", "b"),
		wantPlaced: []string{"a", "b"}, wantPlacedR: fleetv1alpha1.ReasonClustersChosen,
		wantGrant:   fleetv1alpha1.ReasonKeptWithoutGrant,
		wantMessage: []string{"namespace team has no NamespaceGrant for the hub's cluster as traffic cluster, which the existing route already routes"},
		wantTraffic: true,
	}, {
		name:   "an upgrade: the route an earlier hub wrote in the Gateway's namespace is kept",
		grants: []fleetv1alpha1.NamespaceGrant{*grantAllMembersOnly()}, policy: policy(web), binding: placedOn("a", "b"),
		route:      routeRead{state: traffic.State{Message: "the route does not exist"}, legacy: routed.state},
		wantPlaced: []string{"a", "b"}, wantPlacedR: fleetv1alpha1.ReasonClustersChosen,
		wantGrant:   fleetv1alpha1.ReasonKeptWithoutGrant,
		wantMessage: []string{"namespace team has no NamespaceGrant for the hub's cluster as traffic cluster, which the existing route already routes"},
		wantTraffic: true,
	}, {
		name:   "a routed RayService whose policy asks for another hostname is refused",
		grants: []fleetv1alpha1.NamespaceGrant{*grantAllMembersOnly()}, route: routed, binding: placedOn("a", "b"),
		policy:     policy(&fleetv1alpha1.TrafficSpec{ParentRef: web.ParentRef, Hostnames: []string{"b.example.com"}, PathPrefix: "/"}),
		wantPlaced: []string{"a", "b"}, wantPlacedR: fleetv1alpha1.ReasonClustersChosen,
		wantGrant:   fleetv1alpha1.ReasonNotGranted,
		wantMessage: []string{"namespace team has no NamespaceGrant for the hub's cluster as traffic cluster; no route is written"},
		wantTraffic: true, wantNoRoute: true,
	}, {
		name:   "a route attached to a Gateway of that name in another namespace is not kept",
		grants: []fleetv1alpha1.NamespaceGrant{*grantAllMembersOnly()}, policy: policy(web), binding: placedOn("a", "b"),
		route: routeRead{state: traffic.State{Exists: true,
			Matches: traffic.Matches{GatewayNamespace: "other", Gateway: "public", Hostnames: []string{"a.example.com"}, PathPrefix: "/"}}},
		wantPlaced: []string{"a", "b"}, wantPlacedR: fleetv1alpha1.ReasonClustersChosen,
		wantGrant:   fleetv1alpha1.ReasonNotGranted,
		wantMessage: []string{"no route is written"},
		wantTraffic: true, wantNoRoute: true,
	}, {
		name:   "everything granted: no condition",
		grants: []fleetv1alpha1.NamespaceGrant{*grantAll()}, policy: policy(web),
		wantPlaced: []string{"a", "b"}, wantPlacedR: fleetv1alpha1.ReasonClustersChosen, wantTraffic: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGroup(hub, tt.policy, tt.binding)
			g.now = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
			g.grants = grants.For(tt.grants, "team", nil)
			g.route = tt.route
			for _, name := range []string{"a", "b", "c"} {
				g.members[name] = ready(name, nil)
				g.memberClusters[name] = g.members[name].mc
			}
			r.reserved = placement.NewReservations()
			d := decideTwice(t, r, g)
			if !slices.Equal(d.placed, tt.wantPlaced) || d.placedCond.Reason != tt.wantPlacedR {
				t.Errorf("placed = %v %s (%s), want %v %s", d.placed, d.placedCond.Reason, d.placedCond.Message, tt.wantPlaced, tt.wantPlacedR)
			}
			switch {
			case tt.wantGrant == "" && d.grant != nil:
				t.Errorf("GrantMissing = %s: %s, want none", d.grant.Reason, d.grant.Message)
			case tt.wantGrant != "" && d.grant == nil:
				t.Errorf("no GrantMissing, want %s", tt.wantGrant)
			case tt.wantGrant != "":
				if d.grant.Reason != tt.wantGrant {
					t.Errorf("GrantMissing reason = %s, want %s", d.grant.Reason, tt.wantGrant)
				}
				for _, part := range tt.wantMessage {
					if !strings.Contains(d.grant.Message, part) {
						t.Errorf("GrantMissing message %q lacks %q", d.grant.Message, part)
					}
				}
			}
			if (d.traffic != nil) != tt.wantTraffic {
				t.Fatalf("traffic = %v, want a decision: %v", d.traffic, tt.wantTraffic)
			}
			if d.traffic != nil {
				_, notGranted := errors.AsType[*notGrantedError](d.traffic.err)
				if notGranted != tt.wantNoRoute || (tt.wantNoRoute && d.traffic.objs != nil) {
					t.Errorf("traffic err = %v, objs %v; want refused: %v", d.traffic.err, d.traffic.objs != nil, tt.wantNoRoute)
				}
			}
		})
	}
}

// TestDecideCopyRefusesUngranted checks the propagation guard: a member the namespace has no
// grant for, and that never held the RayService, is written nothing whatever chose it.
func TestDecideCopyRefusesUngranted(t *testing.T) {
	r := &Reconciler{}
	hub := raybuilder.MakeRayService("svc", "team").Obj()
	g := newGroup(hub, nil, placedOn("a"))
	g.members["b"] = ready("b", nil)
	f := r.factsOf(g)
	f.ungranted = map[string]string{"b": "namespace team has no NamespaceGrant for member b"}
	a, _ := r.decideCopy(g, f, nil, "b")
	if a.Desired != nil || a.Err == nil || !strings.Contains(a.Err.Error(), "no NamespaceGrant for member b") {
		t.Errorf("action = %+v, want no copy and the grant missing", a)
	}
}

// grantAllMembersOnly grants every namespace every member and no traffic.
func grantAllMembersOnly() *fleetv1alpha1.NamespaceGrant {
	g := grantAll()
	g.Spec.Traffic = nil
	return g
}
