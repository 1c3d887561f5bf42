package traffic

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestPlan(t *testing.T) {
	both := liveOf([]string{"blue", "green"}, []string{"blue", "green"})
	// blueRouted: the route in force sends everything to blue; green's objects are gone (it
	// stopped serving, and the route without it was accepted).
	blueRouted := liveOf([]string{"blue"}, []string{"blue"})
	blueRouted.Route = routeOf(t, Backend{Cluster: "blue", Host: "10.0.0.1", Port: 8000, Weight: 10000})
	tests := []struct {
		name         string
		kind         fleetv1alpha1.BackendKind
		shares       []Share
		live         *Live
		wantWeights  map[string]int32
		wantUnserved map[string]string
		wantKept     map[string]string
		wantPending  []string
		wantRefs     []string
		wantHeld     bool
		wantErr      string
	}{{
		name:        "a steady split",
		shares:      []Share{{Cluster: "green", Weight: 5000, Address: "10.0.0.2:8000"}, {Cluster: "blue", Weight: 5000, Address: "10.0.0.1:8000"}},
		live:        both,
		wantWeights: map[string]int32{"blue": 5000, "green": 5000},
		wantRefs:    []string{"Service. " + be("blue") + ":8000=5000", "Service. " + be("green") + ":8000=5000"},
	}, {
		name:         "green's first step waits for its backend",
		shares:       []Share{{Cluster: "blue", Weight: 5000, Address: "10.0.0.1:8000"}, {Cluster: "green", Weight: 5000, Address: "10.0.0.2:8000"}},
		live:         liveOf([]string{"blue"}, []string{"blue"}),
		wantWeights:  map[string]int32{"blue": 5000, "green": 0},
		wantUnserved: map[string]string{"green": pendingText},
		wantPending:  []string{"green"},
		wantRefs:     []string{"Service. " + be("blue") + ":8000=5000"},
	}, {
		name: "green given everything while its backend is being made: the route in force holds",
		shares: []Share{{Cluster: "blue", Weight: 0, Address: "10.0.0.1:8000"},
			{Cluster: "green", Weight: 10000, Address: "10.0.0.2:8000"}},
		live:         blueRouted,
		wantWeights:  map[string]int32{"blue": 10000, "green": 0},
		wantUnserved: map[string]string{"green": pendingText},
		wantPending:  []string{"green"},
		wantRefs:     []string{"Service. " + be("blue") + ":8000=10000"},
	}, {
		name: "nothing to hold when the cluster in force no longer serves",
		shares: []Share{{Cluster: "blue", Weight: 0, Address: "10.0.0.1:8000", Unserved: "not Ready"},
			{Cluster: "green", Weight: 10000, Address: "10.0.0.2:8000"}},
		live:         blueRouted,
		wantWeights:  map[string]int32{"blue": 0, "green": 0},
		wantUnserved: map[string]string{"blue": "not Ready", "green": pendingText},
		wantPending:  []string{"green"},
	}, {
		name:         "a new route waits for its backends: none is written yet",
		shares:       []Share{{Cluster: "blue", Weight: 5000, Address: "10.0.0.1:8000"}, {Cluster: "green", Weight: 5000, Address: "10.0.0.2:8000"}},
		live:         &Live{},
		wantWeights:  map[string]int32{"blue": 0, "green": 0},
		wantUnserved: map[string]string{"blue": pendingText, "green": pendingText},
		wantPending:  []string{"blue", "green"},
		wantHeld:     true,
	}, {
		name:         "a new route is written once one backend is there",
		shares:       []Share{{Cluster: "blue", Weight: 5000, Address: "10.0.0.1:8000"}, {Cluster: "green", Weight: 5000, Address: "10.0.0.2:8000"}},
		live:         liveOf([]string{"blue"}, []string{"blue"}),
		wantWeights:  map[string]int32{"blue": 5000, "green": 0},
		wantUnserved: map[string]string{"green": pendingText},
		wantPending:  []string{"green"},
		wantRefs:     []string{"Service. " + be("blue") + ":8000=5000"},
	}, {
		name: "unserved and kept by the probe",
		shares: []Share{{Cluster: "blue", Weight: 10000, Address: "10.0.0.1:8000", View: "the member is not Ready"},
			{Cluster: "green", Unserved: "no serve endpoints"}},
		live:         both,
		wantWeights:  map[string]int32{"blue": 10000, "green": 0},
		wantUnserved: map[string]string{"green": "no serve endpoints"},
		wantKept:     map[string]string{"blue": "the member is not Ready"},
		wantRefs:     []string{"Service. " + be("blue") + ":8000=10000"},
	}, {
		name:        "ServiceImports need no address and wait for nothing",
		kind:        fleetv1alpha1.BackendServiceImport,
		shares:      []Share{{Cluster: "blue", Weight: 1}},
		live:        &Live{},
		wantWeights: map[string]int32{"blue": 1},
		wantRefs:    []string{"ServiceImport.multicluster.x-k8s.io " + LegacyImportName(Key(input("").RayService), "blue") + ":8000=1"},
	}, {
		name:        "an address that does not parse writes nothing",
		shares:      []Share{{Cluster: "blue", Weight: 1, Address: "nowhere"}, {Cluster: "green", Weight: 1, Address: "10.0.0.2:8000"}},
		live:        both,
		wantWeights: map[string]int32{"blue": 1, "green": 1},
		wantErr:     "cluster blue: serve address",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(PlanInput{Route: input(tt.kind), Shares: tt.shares, Live: tt.live})
			if tt.wantErr != "" {
				if d.Err == nil || !strings.Contains(d.Err.Error(), tt.wantErr) || d.Objects != nil {
					t.Fatalf("Plan: %v, objects %v; want an error containing %q and no objects", d.Err, d.Objects, tt.wantErr)
				}
			} else if d.Err != nil {
				t.Fatal(d.Err)
			}
			empty := cmpopts.EquateEmpty()
			if diff := cmp.Diff(tt.wantWeights, d.Weights, empty); diff != "" {
				t.Errorf("weights (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUnserved, d.Unserved, empty); diff != "" {
				t.Errorf("unserved (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantKept, d.Kept, empty); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPending, d.Pending, empty); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
			if d.Objects != nil {
				if d.Objects.RouteHeld != tt.wantHeld {
					t.Errorf("route held %v, want %v", d.Objects.RouteHeld, tt.wantHeld)
				}
				if diff := cmp.Diff(tt.wantRefs, refs(d.Objects.Route), empty); diff != "" {
					t.Errorf("refs (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// routeOf is the route Desired makes for backends.
func routeOf(t *testing.T, backends ...Backend) *gwv1.HTTPRoute {
	t.Helper()
	objs, err := Desired(input("", backends...))
	if err != nil {
		t.Fatal(err)
	}
	return objs.Route
}
