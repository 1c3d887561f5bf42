package leaving

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

var (
	now = time.Date(2026, 11, 24, 10, 0, 0, 500_000_000, time.UTC)
	// since is now as the API stores it, to the second.
	since = metav1.NewTime(now.Truncate(time.Second))
	// before is a leaving entry the binding recorded a minute ago.
	before = fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveFailedOver, Since: metav1.NewTime(now.Add(-time.Minute).Truncate(time.Second))}
)

// holding is a Ready member, not placed, that holds a copy of ours.
func holding(name string) Cluster {
	return Cluster{Name: name, HasCopy: true, Ready: true}
}

func TestEntries(t *testing.T) {
	tests := []struct {
		name    string
		cluster func(Cluster) Cluster
		want    *Entry
	}{{
		name:    "placed: not leaving",
		cluster: func(c Cluster) Cluster { c.Placed = true; return c },
	}, {
		name:    "the member left the fleet: nothing to keep",
		cluster: func(c Cluster) Cluster { c.Gone = true; c.Previous = &before; return c },
	}, {
		name:    "a foreign copy: not ours to remove",
		cluster: func(c Cluster) Cluster { c.Foreign = true; return c },
	}, {
		name:    "no copy on a Ready member: forgotten",
		cluster: func(c Cluster) Cluster { c.HasCopy = false; c.Previous = &before; return c },
	}, {
		name:    "no copy on a member not Ready: not believed",
		cluster: func(c Cluster) Cluster { c.HasCopy, c.Ready = false, false; return c },
		want:    &Entry{Leaving: fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveFailedOver, Since: since}, Fresh: true, Why: notChosen},
	}, {
		name:    "unreadable: leaving, whatever it last held",
		cluster: func(c Cluster) Cluster { c.Unreadable, c.HasCopy = true, false; return c },
		want:    &Entry{Leaving: fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveMoved, Since: since}, Fresh: true, Why: notChosen},
	}, {
		name:    "unreadable while the last read saw a foreign copy: leaving",
		cluster: func(c Cluster) Cluster { c.Unreadable, c.Foreign = true, true; return c },
		want:    &Entry{Leaving: fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveMoved, Since: since}, Fresh: true, Why: notChosen},
	}, {
		name:    "the previous entry kept as it is",
		cluster: func(c Cluster) Cluster { c.Previous, c.Rejected = &before, "tainted"; return c },
		want:    &Entry{Leaving: before, Why: "tainted"},
	}, {
		name:    "fresh, Ready: Moved, with placement's reason",
		cluster: func(c Cluster) Cluster { c.Rejected = "tainted"; return c },
		want:    &Entry{Leaving: fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveMoved, Since: since}, Fresh: true, Why: "tainted"},
	}, {
		name:    "fresh, not Ready: FailedOver",
		cluster: func(c Cluster) Cluster { c.Ready, c.Rejected = false, "not Ready past its toleration"; return c },
		want: &Entry{Leaving: fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveFailedOver, Since: since}, Fresh: true,
			Why: "not Ready past its toleration"},
	}, {
		name: "fresh, given up by the rollout: its reason, and no why",
		cluster: func(c Cluster) Cluster {
			c.Ready, c.Rejected, c.LeaveAs = false, "tainted", fleetv1alpha1.LeaveRetired
			return c
		},
		want: &Entry{Leaving: fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveRetired, Since: since}, Fresh: true},
	}, {
		name:    "the rollout's reason does not rewrite a previous entry",
		cluster: func(c Cluster) Cluster { c.Previous, c.LeaveAs = &before, fleetv1alpha1.LeaveRetired; return c },
		want:    &Entry{Leaving: before, Why: notChosen},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cluster(holding("eu"))
			got := Entries(Input{Clusters: []Cluster{c, {Name: "us", Placed: true, HasCopy: true, Ready: true}}, Now: now})
			want := map[string]Entry{}
			if tt.want != nil {
				want["eu"] = *tt.want
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	moved := func(c Cluster) Cluster {
		c.Previous = &fleetv1alpha1.ClusterLeaving{Reason: fleetv1alpha1.LeaveMoved, Since: before.Since}
		return c
	}
	failedOver := func(c Cluster) Cluster { c.Previous = &before; return c }
	tests := []struct {
		name     string
		mode     fleetv1alpha1.PurgeMode
		notDone  []string
		clusters []Cluster
		want     map[string]propagation.Kind
		kept     []string
		retained []string
	}{{
		name:     "placed clusters done: the moved copies go",
		clusters: []Cluster{moved(holding("c")), moved(holding("b")), {Name: "a", Placed: true, HasCopy: true, Ready: true}},
		want:     map[string]propagation.Kind{"b": propagation.Remove, "c": propagation.Remove},
	}, {
		name:     "a placed cluster not done: every leaving copy stays",
		notDone:  []string{"a: applying"},
		clusters: []Cluster{moved(holding("c")), failedOver(holding("b"))},
		want:     map[string]propagation.Kind{"b": propagation.Keep, "c": propagation.Keep},
		kept:     []string{"b", "c"},
	}, {
		name:     "still draining: kept",
		clusters: []Cluster{func() Cluster { c := moved(holding("c")); c.Draining = true; return c }()},
		want:     map[string]propagation.Kind{"c": propagation.Keep},
		kept:     []string{"c"},
	}, {
		name: "failed over, Graceful, member unreachable: kept",
		clusters: []Cluster{func() Cluster {
			c := failedOver(holding("c"))
			c.Unreadable, c.Ready = true, false
			return c
		}()},
		want: map[string]propagation.Kind{"c": propagation.Keep},
		kept: []string{"c"},
	}, {
		name:     "failed over, Never: kept and retained",
		mode:     fleetv1alpha1.PurgeNever,
		clusters: []Cluster{failedOver(holding("c"))},
		want:     map[string]propagation.Kind{"c": propagation.Keep},
		kept:     []string{"c"}, retained: []string{"c"},
	}, {
		name: "failed over, Immediately: removed while still not Ready",
		mode: fleetv1alpha1.PurgeImmediately,
		clusters: []Cluster{func() Cluster {
			c := failedOver(holding("c"))
			c.Ready = false
			return c
		}()},
		want: map[string]propagation.Kind{"c": propagation.Remove},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode := tt.mode
			if mode == "" {
				mode = fleetv1alpha1.PurgeGraceful
			}
			res := Plan(Input{Clusters: tt.clusters, Now: now, PurgeMode: mode, NotDone: tt.notDone, Placed: 1})
			got := map[string]propagation.Kind{}
			for name, a := range res.Actions {
				got[name] = a.Kind
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if !slices.Equal(res.Kept, tt.kept) {
				t.Errorf("Kept = %v, want %v", res.Kept, tt.kept)
			}
			if !slices.Equal(res.Retained, tt.retained) {
				t.Errorf("Retained = %v, want %v", res.Retained, tt.retained)
			}
			if len(res.Entries) != len(tt.want) {
				t.Errorf("Entries = %v, want one per action", res.Entries)
			}
		})
	}
}

// TestKeep: an invalid decision keeps every cluster the binding lists as leaving, as it is,
// and acts on none.
func TestKeep(t *testing.T) {
	gone := holding("d")
	gone.Gone, gone.Previous = true, &before
	placed := holding("a")
	placed.Placed, placed.Previous = true, &before
	noCopy := holding("b")
	noCopy.HasCopy, noCopy.Previous = false, &before
	got := Keep(Input{Clusters: []Cluster{holding("e"), gone, placed, noCopy, {Name: "c", Unreadable: true, Previous: &before}}, Now: now})
	want := Result{Entries: map[string]Entry{"b": {Leaving: before}, "c": {Leaving: before}}, Kept: []string{"b", "c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Keep (-want +got):\n%s", diff)
	}
}

func TestPurgeModeOf(t *testing.T) {
	for _, tc := range []struct {
		pp   *fleetv1alpha1.PlacementPolicy
		want fleetv1alpha1.PurgeMode
	}{
		{nil, fleetv1alpha1.PurgeGraceful},
		{&fleetv1alpha1.PlacementPolicy{}, fleetv1alpha1.PurgeGraceful},
		{&fleetv1alpha1.PlacementPolicy{Spec: fleetv1alpha1.PlacementPolicySpec{Failover: &fleetv1alpha1.FailoverPolicy{}}}, fleetv1alpha1.PurgeGraceful},
		{&fleetv1alpha1.PlacementPolicy{Spec: fleetv1alpha1.PlacementPolicySpec{Failover: &fleetv1alpha1.FailoverPolicy{PurgeMode: fleetv1alpha1.PurgeNever}}}, fleetv1alpha1.PurgeNever},
	} {
		if got := PurgeModeOf(tc.pp); got != tc.want {
			t.Errorf("PurgeModeOf(%+v) = %s, want %s", tc.pp, got, tc.want)
		}
	}
}
