package fleet

import (
	"errors"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// probeGroup is a group with members eu (green) and us (blue), each serving at its address
// with 2 endpoints, its last status recorded in the binding.
func probeGroup(now time.Time) *group {
	grant := &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"10.0.0.0/8"}}
	g := &group{now: now, members: map[string]*memberRecord{}, probes: map[string]dataplane.Health{},
		probeFresh: 3 * dataplane.DefaultInterval, binding: &fleetv1alpha1.RayServiceBinding{}}
	for _, m := range []struct{ name, addr string }{{"eu", "10.0.0.1:8000"}, {"us", "10.0.0.2:8000"}} {
		mc := readyMember(m.name)
		mc.Spec.ServeAddresses = grant
		cp := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{labels.ServeAddress: m.addr}}}
		cp.Status.NumServeEndpoints = 2
		g.members[m.name] = &memberRecord{name: m.name, mc: mc, copy: cp}
		g.binding.Status.Clusters = append(g.binding.Status.Clusters,
			fleetv1alpha1.ClusterStatus{Name: m.name, ServeAddress: m.addr, NumServeEndpoints: 2})
	}
	return g
}

func TestBackendOfBothViews(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	serving, _ := dataplane.Health{}.Observe(nil, t0, dataplane.DefaultFailAfter)
	failing, _ := dataplane.Health{}.Observe(errors.New("connection refused"), t0, 1)
	tests := []struct {
		name string
		// edit breaks eu's member and probe state.
		edit     func(g *group)
		wantWhy  string
		wantKept bool
	}{
		{name: "no probe result yet: today's rule", edit: func(*group) {}},
		{name: "unreachable, no probe result: not reachable",
			edit: func(g *group) { unreachable(g.members["eu"]) }, wantWhy: "not reachable"},
		{name: "unreachable, answering the probe: keeps its weight with its last known address",
			edit: func(g *group) {
				unreachable(g.members["eu"])
				g.probes["10.0.0.1:8000"] = serving
			}, wantKept: true},
		{name: "unreachable, answering, but the address last known is not granted any more",
			edit: func(g *group) {
				unreachable(g.members["eu"])
				g.members["eu"].mc.Spec.ServeAddresses = &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"192.168.0.0/16"}}
				g.probes["10.0.0.1:8000"] = serving
			}, wantWhy: "not reachable"},
		{name: "unreachable, the probe verdict stale: not reachable",
			edit: func(g *group) {
				unreachable(g.members["eu"])
				g.probes["10.0.0.1:8000"] = serving
				g.now = t0.Add(time.Minute)
			}, wantWhy: "not reachable"},
		{name: "not Ready, answering the probe: keeps its weight",
			edit: func(g *group) {
				g.members["eu"].mc.Status.Conditions = readyCond(metav1.ConditionFalse, "HeartbeatStale", "")
				g.probes["10.0.0.1:8000"] = serving
			}, wantKept: true},
		{name: "reachable and Ready, failing the probe: off",
			edit: func(g *group) { g.probes["10.0.0.1:8000"] = failing }, wantWhy: "serve endpoint failing: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := probeGroup(t0)
			tt.edit(g)
			r := &Reconciler{}
			facts := r.factsOf(g).backends([]string{"eu", "us"})
			whys := dataplane.Unserved(facts)
			if whys["eu"] != tt.wantWhy {
				t.Errorf("eu: %q, want %q", whys["eu"], tt.wantWhy)
			}
			if kept := whys["eu"] == "" && facts["eu"].View != ""; kept != tt.wantKept {
				t.Errorf("eu kept by the probe: %v, want %v", kept, tt.wantKept)
			}
			if whys["us"] != "" {
				t.Errorf("us: %q, want serving", whys["us"])
			}
			if tt.wantWhy == "" && backendAddress(g, "eu") != "10.0.0.1:8000" {
				t.Errorf("eu routed to %q, want its last known address", backendAddress(g, "eu"))
			}
		})
	}
}

// TestGreenFailingMidShift: green's weight goes to blue at once (rollout.Weights gives an empty
// colour's share to the other), and the planner sees green not done, which pauses the shift and
// reverts it at the strategy's deadline.
func TestGreenFailingMidShift(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := probeGroup(t0)
	g.probes["10.0.0.1:8000"], _ = dataplane.Health{}.Observe(errors.New("503"), t0, 1)
	whys := dataplane.Unserved((&Reconciler{}).factsOf(g).backends([]string{"eu", "us"}))
	got := rollout.Weights([]rollout.Backend{
		{Name: "eu", Color: fleetv1alpha1.ColorGreen, Serving: whys["eu"] == "", Endpoints: 2},
		{Name: "us", Color: fleetv1alpha1.ColorBlue, Serving: whys["us"] == "", Endpoints: 2},
	}, 40)
	if got["eu"] != 0 || got["us"] != rollout.TotalWeight {
		t.Errorf("weights %v, want all of it on blue us", got)
	}
}

func unreachable(m *memberRecord) {
	m.readErr = errors.New("get RayService on cluster eu: connection timed out")
	m.copy = nil
}

// A green cluster failing the probe is not done: the blue/green planner pauses the shift, and
// reverts it at progressDeadlineSeconds.
func TestWithProbe(t *testing.T) {
	done := rollout.Cluster{Name: "eu", Ready: true, Done: true}
	if got := withProbe(done, dataplane.Backend{Probe: dataplane.Serving}); !got.Done {
		t.Errorf("serving: %+v, want done", got)
	}
	if got := withProbe(done, dataplane.Backend{}); !got.Done {
		t.Errorf("no verdict: %+v, want done", got)
	}
	got := withProbe(done, dataplane.Backend{Probe: dataplane.Failing, ProbeErr: "GET /-/healthz: 503"})
	if got.Done || got.NotDone != "serve endpoint failing: GET /-/healthz: 503" {
		t.Errorf("failing: %+v, want not done, saying why", got)
	}
	notDone := rollout.Cluster{Name: "eu", Ready: true, NotDone: "applying"}
	if got := withProbe(notDone, dataplane.Backend{Probe: dataplane.Failing}); got.NotDone != "applying" {
		t.Errorf("not done already: %+v, want its own reason kept", got)
	}
}
