package fleet

import (
	"errors"
	"slices"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/hub/grants"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// TestDecide tables the reconciler's decision for a group read by hand: no API server, no
// client call (the fake client only lends its scheme).
func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{
		client: fake.NewClientBuilder().WithScheme(sch).Build(),
		memory: memory{reserved: placement.NewReservations(), validSpecs: validation.NewSpecMemo()},
	}
	hub := raybuilder.MakeRayService("svc", "team").Annotation(labels.PlacementPolicy, "two").Obj()
	two := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "two"},
		Spec:       fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone}},
	}
	// ours is the copy the hub would apply on cluster, as if read from it.
	ours := func(cluster string) *rayv1.RayService {
		g := newGroup(hub, two, nil)
		g.members[cluster] = ready(cluster, nil)
		rs, err := r.planRollout(g, r.factsOf(g), placementResult{overrides: two.Spec.Overrides}, two)
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.copyOf(g, r.factsOf(g), rs.rollout, cluster, rs.rollout.target)
		if err != nil {
			t.Fatal(err)
		}
		c.UID = "copy-uid"
		return c
	}
	foreign := raybuilder.MakeRayService("svc", "team").Obj()

	tests := []struct {
		name       string
		hub        *rayv1.RayService
		policy     *fleetv1alpha1.PlacementPolicy
		binding    *fleetv1alpha1.RayServiceBinding
		members    map[string]*memberRecord
		refusals   map[string]fleetv1alpha1.ClusterRefusal
		wantPlaced []string
		// wantActions maps each cluster with an action to apply, remove or none.
		wantActions   map[string]string
		wantForeign   []string
		wantKept      []string
		wantReason    string
		wantInvalidOf string
	}{{
		name: "a new RayService is applied on the two clusters chosen",
		hub:  hub, policy: two,
		members:     map[string]*memberRecord{"a": ready("a", nil), "b": ready("b", nil), "c": ready("c", nil)},
		wantPlaced:  []string{"a", "b"},
		wantActions: map[string]string{"a": "apply", "b": "apply"},
		wantReason:  fleetv1alpha1.ReasonClustersChosen,
	}, {
		name: "a copy that is as the hub would apply it is left alone",
		hub:  hub, policy: two, binding: placedOn("a", "b"),
		members:     map[string]*memberRecord{"a": ready("a", ours("a")), "b": ready("b", nil)},
		wantPlaced:  []string{"a", "b"},
		wantActions: map[string]string{"a": "none", "b": "apply"},
		wantReason:  fleetv1alpha1.ReasonClustersChosen,
	}, {
		name: "a cluster no longer placed keeps its copy until the placed ones are done (TestDecideLeaving); so does an unreachable one",
		hub:  hub, policy: two, binding: placedOn("a", "b", "c", "d"),
		members: map[string]*memberRecord{
			"a": ready("a", ours("a")), "b": ready("b", ours("b")), "c": ready("c", ours("c")),
			"d": {name: "d", mc: readyMember("d"), readErr: errors.New("connection refused")},
		},
		wantPlaced:  []string{"a", "b"},
		wantActions: map[string]string{"a": "none", "b": "none", "c": "none", "d": "none"},
		wantKept:    []string{"c", "d"},
		wantReason:  fleetv1alpha1.ReasonClustersChosen,
	}, {
		name: "a RayService of that name the hub did not make is left alone",
		hub:  hub, policy: two,
		members:     map[string]*memberRecord{"a": ready("a", foreign), "b": ready("b", nil)},
		wantPlaced:  []string{"a", "b"},
		wantActions: map[string]string{"a": "none", "b": "apply"},
		wantForeign: []string{"a"},
		wantReason:  fleetv1alpha1.ReasonClustersChosen,
	}, {
		name: "a member refusing this spec, with no copy there, is not chosen",
		hub:  hub, policy: two,
		members:     map[string]*memberRecord{"a": ready("a", nil), "b": ready("b", nil), "c": ready("c", nil)},
		refusals:    map[string]fleetv1alpha1.ClusterRefusal{"a": {Cluster: "a", Rule: "hubPolicy/privileged"}},
		wantPlaced:  []string{"b", "c"},
		wantActions: map[string]string{"b": "apply", "c": "apply"},
		wantReason:  fleetv1alpha1.ReasonClustersChosen,
	}, {
		name: "a missing policy leaves the placement as it was and touches nothing",
		hub:  hub, binding: placedOn("a"),
		members:    map[string]*memberRecord{"a": ready("a", ours("a")), "b": ready("b", nil)},
		wantPlaced: []string{"a"}, wantActions: map[string]string{"a": "none"},
		wantReason: fleetv1alpha1.ReasonPolicyNotFound,
	}, {
		name: "an invalid RayService is not placed, applied or removed",
		hub: func() *rayv1.RayService {
			bad := hub.DeepCopy()
			bad.Spec.ServeConfigV2 = "[1, 2]"
			bad.Generation++ // as the API server counts a spec change
			return bad
		}(), policy: two, binding: placedOn("a"),
		members:       map[string]*memberRecord{"a": ready("a", ours("a")), "b": ready("b", nil)},
		wantPlaced:    []string{"a"},
		wantReason:    fleetv1alpha1.ReasonValidationFailed,
		wantInvalidOf: fleetv1alpha1.ReasonValidationFailed,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGroup(tt.hub, tt.policy, tt.binding)
			g.now = now
			g.members = tt.members
			for name, m := range tt.members {
				g.memberClusters[name] = m.mc
			}
			g.refusals = tt.refusals
			r.reserved = placement.NewReservations()
			d := decideTwice(t, r, g)
			if !slices.Equal(d.placed, tt.wantPlaced) {
				t.Errorf("placed = %v, want %v (%s)", d.placed, tt.wantPlaced, d.placedCond.Message)
			}
			if d.placedCond.Reason != tt.wantReason {
				t.Errorf("Placed reason = %s (%s), want %s", d.placedCond.Reason, d.placedCond.Message, tt.wantReason)
			}
			if tt.wantInvalidOf != "" && (d.invalid == nil || d.invalidReason != tt.wantInvalidOf) {
				t.Errorf("invalid = %v (%s), want reason %s", d.invalid, d.invalidReason, tt.wantInvalidOf)
			}
			got := map[string]string{}
			for name, a := range d.actions {
				got[name] = map[propagation.Kind]string{propagation.Keep: "none", propagation.Apply: "apply", propagation.Remove: "remove"}[a.Kind]
			}
			if tt.wantActions == nil {
				tt.wantActions = map[string]string{}
			}
			if !mapsEqual(got, tt.wantActions) {
				t.Errorf("actions = %v, want %v", got, tt.wantActions)
			}
			if !slices.Equal(d.foreign, tt.wantForeign) {
				t.Errorf("foreign = %v, want %v", d.foreign, tt.wantForeign)
			}
			if !slices.Equal(d.kept, tt.wantKept) {
				t.Errorf("kept = %v, want %v", d.kept, tt.wantKept)
			}
		})
	}
}

// newGroup is a group of hub placed by policy (nil: a policy that is missing) and binding.
func newGroup(hub *rayv1.RayService, policy *fleetv1alpha1.PlacementPolicy, binding *fleetv1alpha1.RayServiceBinding) *group {
	g := &group{
		hub: hub, key: types.NamespacedName{Namespace: hub.Namespace, Name: hub.Name}, binding: binding,
		policy:         policyRead{name: "two", pp: policy},
		memberClusters: map[string]*fleetv1alpha1.MemberCluster{},
		members:        map[string]*memberRecord{},
		grants:         grants.For([]fleetv1alpha1.NamespaceGrant{*grantAll()}, hub.Namespace, nil),
	}
	return g
}

// ungrantedLabel marks a test namespace that grantAll does not select.
const ungrantedLabel = "test.rayfleet.io/ungranted"

// grantAll grants every namespace without ungrantedLabel every member and all traffic.
func grantAll() *fleetv1alpha1.NamespaceGrant {
	return &fleetv1alpha1.NamespaceGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "all"},
		Spec: fleetv1alpha1.NamespaceGrantSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: ungrantedLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}},
			Members: &fleetv1alpha1.MemberGrant{ClusterSelector: &metav1.LabelSelector{}},
			Traffic: []fleetv1alpha1.TrafficGrant{{Cluster: fleetv1alpha1.AnyName,
				Gateways:  []fleetv1alpha1.GatewayGrant{{Namespace: fleetv1alpha1.AnyName, Name: fleetv1alpha1.AnyName}},
				Hostnames: []string{fleetv1alpha1.AnyName}, PathPrefixes: []string{"/"}}},
		},
	}
}

// ready is a reachable, Ready member whose copy is member (nil: none).
func ready(name string, member *rayv1.RayService) *memberRecord {
	return &memberRecord{name: name, mc: readyMember(name), copy: member}
}

// readyMember is a Ready MemberCluster with room for the test RayService.
func readyMember(name string) *fleetv1alpha1.MemberCluster {
	free := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")}
	return &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: fleetv1alpha1.MemberClusterStatus{
			Conditions: readyCond(metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady, ""),
			Capacity:   &fleetv1alpha1.ClusterCapacity{Allocatable: free, Free: free},
		},
	}
}

// placedOn is a binding whose decision was clusters.
func placedOn(clusters ...string) *fleetv1alpha1.RayServiceBinding {
	return &fleetv1alpha1.RayServiceBinding{Spec: fleetv1alpha1.RayServiceBindingSpec{Clusters: clusters}}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
