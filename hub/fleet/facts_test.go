package fleet

import (
	"errors"
	"maps"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// The probes watch the placed clusters' addresses the hub may route to, the last recorded one
// while a copy cannot be read, and none when the members export their serve Services.
func TestFactsProbeTargets(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	both := map[string]string{"10.0.0.1:8000": "eu", "10.0.0.2:8000": "us"}
	tests := []struct {
		name   string
		edit   func(g *group, r *Reconciler)
		placed []string
		want   map[string]string
	}{
		{name: "both granted", want: both},
		{name: "eu's address outside its grant", edit: func(g *group, _ *Reconciler) {
			g.members["eu"].mc.Spec.ServeAddresses = &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"192.168.0.0/16"}}
		}, want: map[string]string{"10.0.0.2:8000": "us"}},
		{name: "eu unreachable: its last recorded address", edit: func(g *group, _ *Reconciler) {
			g.members["eu"].readErr, g.members["eu"].copy = errors.New("timed out"), nil
		}, want: both},
		{name: "a placed cluster with no record", placed: []string{"eu", "us", "gone"}, want: both},
		{name: "serve exported: nothing probed", edit: func(g *group, _ *Reconciler) {
			g.policy.pp.Spec.Traffic.BackendKind = fleetv1alpha1.BackendServiceImport
		}},
		{name: "no prober", edit: func(_ *group, r *Reconciler) { r.opts.Probes = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := probeGroup(t0)
			g.policy.pp = &fleetv1alpha1.PlacementPolicy{Spec: fleetv1alpha1.PlacementPolicySpec{Traffic: &fleetv1alpha1.TrafficSpec{}}}
			// factsOf only asks whether there is a prober.
			r := &Reconciler{opts: Options{Probes: &dataplane.Prober{}}}
			if tt.edit != nil {
				tt.edit(g, r)
			}
			placed := tt.placed
			if placed == nil {
				placed = []string{"eu", "us"}
			}
			if got := r.factsOf(g).probeTargets(placed); !maps.Equal(got, tt.want) {
				t.Errorf("probe targets %v, want %v", got, tt.want)
			}
		})
	}
}

// A failover waits while a cluster the RayService is placed on does not serve yet.
func TestFactsFailingOver(t *testing.T) {
	servingCopy := &rayv1.RayService{Status: rayv1.RayServiceStatuses{Conditions: []metav1.Condition{
		{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: "Ready"}}}}
	tests := []struct {
		name string
		a    *memberRecord
		want string
	}{
		{name: "the replacement serves", a: ready("a", servingCopy)},
		{name: "the replacement has no copy yet", a: ready("a", nil), want: "c"},
		{name: "the replacement cannot be read", a: &memberRecord{name: "a", mc: readyMember("a"), readErr: errors.New("timed out")}, want: "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := placedOn("a")
			b.Status.Clusters = []fleetv1alpha1.ClusterStatus{{Name: "c",
				Leaving: &fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveFailedOver}}}
			g := newGroup(raybuilder.MakeRayService("svc", "team").Obj(), nil, b)
			g.members["a"] = tt.a
			if got := (&Reconciler{}).factsOf(g).failingOver; got != tt.want {
				t.Errorf("failing over from %q, want %q", got, tt.want)
			}
		})
	}
}
