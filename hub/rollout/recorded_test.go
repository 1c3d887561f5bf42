package rollout

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestPhasesOf(t *testing.T) {
	tests := []struct {
		name     string
		clusters []fleetv1alpha1.ClusterStatus
		want     map[string]ClusterPhase
	}{{
		name: "no binding status: no phases, an empty map",
		want: map[string]ClusterPhase{},
	}, {
		name: "a phase with no times",
		clusters: []fleetv1alpha1.ClusterStatus{
			{Name: "a", RolloutPhase: fleetv1alpha1.ClusterPending},
		},
		want: map[string]ClusterPhase{"a": {Phase: fleetv1alpha1.ClusterPending}},
	}, {
		name: "phaseTime is since when, updateTime when the update began",
		clusters: []fleetv1alpha1.ClusterStatus{
			{Name: "a", RolloutPhase: fleetv1alpha1.ClusterSoaking, PhaseTime: mt(30), UpdateTime: mt(10)},
			{Name: "b", RolloutPhase: fleetv1alpha1.ClusterUpdating, PhaseTime: mt(20)},
			{Name: "c"},
		},
		want: map[string]ClusterPhase{
			"a": {Phase: fleetv1alpha1.ClusterSoaking, Since: at(30), Started: at(10)},
			"b": {Phase: fleetv1alpha1.ClusterUpdating, Since: at(20)},
			"c": {},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PhasesOf(tt.clusters)
			if got == nil {
				t.Fatal("PhasesOf returned nil")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("phases (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithoutLeaving(t *testing.T) {
	tests := []struct {
		name         string
		leave        map[string]fleetv1alpha1.LeaveReason
		placed       []string
		wantPlaced   []string
		wantClusters []string
	}{{
		name:   "nothing leaves: all stay",
		placed: []string{"a", "b", "c"}, wantPlaced: []string{"a", "b", "c"}, wantClusters: []string{"a", "b", "c"},
	}, {
		name:   "blue retired once the rollout completes",
		leave:  map[string]fleetv1alpha1.LeaveReason{"a": fleetv1alpha1.LeaveRetired, "c": fleetv1alpha1.LeaveRetired},
		placed: []string{"a", "b", "c", "d"}, wantPlaced: []string{"b", "d"}, wantClusters: []string{"b", "d"},
	}, {
		name:   "green rolled back: every one of them leaves",
		leave:  map[string]fleetv1alpha1.LeaveReason{"a": fleetv1alpha1.LeaveRolledBack, "b": fleetv1alpha1.LeaveRolledBack},
		placed: []string{"a", "b"}, wantPlaced: []string{}, wantClusters: []string{},
	}, {
		name:   "a cluster leaving that is not placed changes nothing",
		leave:  map[string]fleetv1alpha1.LeaveReason{"z": fleetv1alpha1.LeaveRetired},
		placed: []string{"a"}, wantPlaced: []string{"a"}, wantClusters: []string{"a"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clusters := make([]Cluster, 0, len(tt.placed))
			for _, name := range tt.placed {
				clusters = append(clusters, Cluster{Name: name, Revision: "r1"})
			}
			placedBefore, clustersBefore := slices.Clone(tt.placed), slices.Clone(clusters)
			placed, kept := WithoutLeaving(&Decision{Leave: tt.leave}, tt.placed, clusters)
			if diff := cmp.Diff(tt.wantPlaced, placed); diff != "" {
				t.Errorf("placed (-want +got):\n%s", diff)
			}
			var names []string
			for _, c := range kept {
				names = append(names, c.Name)
				if c.Revision != "r1" {
					t.Errorf("cluster %s kept as %+v, want it unchanged", c.Name, c)
				}
			}
			if !slices.Equal(names, tt.wantClusters) {
				t.Errorf("clusters = %v, want %v", names, tt.wantClusters)
			}
			if !slices.Equal(tt.placed, placedBefore) || !cmp.Equal(clusters, clustersBefore) {
				t.Errorf("the inputs changed: placed %v, clusters %+v", tt.placed, clusters)
			}
		})
	}
}

func TestHistoryLimit(t *testing.T) {
	tests := []struct {
		name string
		spec *fleetv1alpha1.RolloutStrategy
		want int
	}{
		{name: "no rollout spec: the default", want: int(fleetv1alpha1.DefaultRevisionHistoryLimit)},
		{name: "no limit set: the default", spec: &fleetv1alpha1.RolloutStrategy{}, want: int(fleetv1alpha1.DefaultRevisionHistoryLimit)},
		{name: "a limit set", spec: &fleetv1alpha1.RolloutStrategy{RevisionHistoryLimit: ptr.To[int32](3)}, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HistoryLimit(tt.spec); got != tt.want {
				t.Errorf("HistoryLimit = %d, want %d", got, tt.want)
			}
		})
	}
}
